"""Everything that differs between the PyTorch versions the capture runs on.

Primary target: PyTorch 2.11 (the GPU machines: fake tensors claim `cuda:0`, so autocast and
dtype rules are CUDA's). Also runs on PyTorch 1.13 (Debian's python3-torch on CPU-only CI): fake
tensors claim `cpu` there, since a CPU-only build cannot dispatch a CUDA-keyed tensor; CPU
autocast's op lists apply, and `scaled_dot_product_attention` and `nn.RMSNorm` do not exist, so
the stand-ins below provide them (SCHEMA.md, "Stand-ins"). Each branch on the version says why.
"""
import contextlib
import functools
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

TORCH_VERSION = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
TORCH2 = TORCH_VERSION >= (2, 0)


def has_aten(name):
    try:
        getattr(torch.ops.aten, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def make_fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    if TORCH2:
        # 2.x: a real tensor reaching an op (a module-level constant of some library) is converted to
        # a fake one rather than refused; it shows as a pre-existing buffer ("existing")
        return FakeTensorMode(allow_non_fake_inputs=True)
    return FakeTensorMode()


def cuda_fake_possible():
    """Fake tensors can claim CUDA only in a CUDA build (the dispatcher needs CUDA's device guard)."""
    return torch.cuda.is_available()


def default_device():
    return "cuda" if cuda_fake_possible() else "cpu"


_current_node = getattr(torch._C, "_current_autograd_node", None)


def current_autograd_node_name():
    """The autograd node running a backward op (2.x only; None on 1.13)."""
    if _current_node is None:
        return None
    try:
        n = _current_node()
        return n.name() if n is not None else None
    except Exception:
        return None


_POINTWISE = getattr(getattr(torch, "Tag", None), "pointwise", None)


def is_pointwise(func):
    if _POINTWISE is None:
        return True
    try:
        return _POINTWISE in func.tags
    except Exception:
        return True


def autocast(device_type, dtype):
    return torch.autocast(device_type=device_type, dtype=dtype)


def grad_scaler(device_type):
    """GradScaler for fp16: torch.amp.GradScaler(device) from 2.3; torch.cuda.amp.GradScaler before."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device_type)
    if device_type != "cuda":
        raise RuntimeError(f"fp16-scaler needs CUDA or PyTorch >= 2.3 (GradScaler on {device_type}); "
                           f"this is PyTorch {torch.__version__}")
    return torch.cuda.amp.GradScaler()


def checkpoint(fn, *args, **kwargs):
    """Non-reentrant activation checkpointing as torchtitan applies it (no RNG state kept: no dropout).

    Keyword arguments are bound with functools.partial: 1.13's checkpoint takes none."""
    from torch.utils.checkpoint import checkpoint as ckpt
    f = functools.partial(fn, **kwargs) if kwargs else fn
    return ckpt(f, *args, use_reentrant=False, preserve_rng_state=False)


@contextlib.contextmanager
def no_profiler_ranges():
    """Optimizer.step opens torch.autograd.profiler.record_function ranges, whose op
    (profiler::_record_function_enter) returns a handle fake tensors cannot make; no kernel either."""
    import torch.autograd.profiler as ap
    saved = ap.record_function
    saved_p = getattr(torch.profiler, "record_function", None)

    class _NoRange(contextlib.ContextDecorator):
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    ap.record_function = _NoRange
    if saved_p is not None:
        torch.profiler.record_function = _NoRange
    try:
        yield
    finally:
        ap.record_function = saved
        if saved_p is not None:
            torch.profiler.record_function = saved_p


# ---------------------------------------------------------------------------------------------
# Scaled dot-product attention stand-in (SCHEMA.md, "Stand-ins"). PyTorch picks an SDPA backend
# by querying the GPU; fake tensors have no GPU to ask, so the capture decides by a stated rule
# (the constraints of aten/src/ATen/native/transformers/cuda/sdp_utils.cpp that do not depend on
# the GPU: both fused kernels want q, k and v of one dtype once autocast has cast them
# (check_tensor_dtype); flash takes fewer key/value heads only with enable_gqa, the memory-efficient
# kernel never (check_batch_size_and_num_heads_dense<false>)):
#   flash     : 2.x, q in fp16/bf16, no attn_mask, head_dim <= 256 (head_dim padded to a multiple of
#               8 first, as SDPA does for flash), the query's heads or enable_gqa;
#   efficient : 2.x, not flash, an additive/boolean mask or fp32, head_dim <= 512, the query's heads;
#   math      : otherwise (a single key/value head broadcast without enable_gqa, as Falcon's
#               multi-query attention does), and always on 1.13 (no fused SDPA kernels there).
# The rule is recorded in each attention op ("backend") and in the capture's stand-ins.

_ORIG_SDPA = getattr(F, "scaled_dot_product_attention", None)
SDPA_POLICY = {"mode": "auto"}  # "auto" (the rule above) or "flash" / "efficient" / "math" forced


def _autocast_dtype():
    """The dtype autocast casts SDPA's inputs to (SDPA is on its lower-precision list), or None."""
    try:
        if torch.is_autocast_enabled("cuda"):
            return torch.get_autocast_dtype("cuda")
    except TypeError:  # before 2.4: no device argument; 1.13 has no fused SDPA anyway
        if torch.is_autocast_enabled():
            return torch.get_autocast_gpu_dtype()
    return None


def sdpa_backend(q, k, v, attn_mask, dropout_p, enable_gqa=False):
    mode = SDPA_POLICY["mode"]
    d = q.shape[-1]
    cast = _autocast_dtype()
    dtype = cast or q.dtype
    one_dtype = cast is not None or q.dtype == k.dtype == v.dtype
    heads_q, heads_kv = q.shape[-3] if q.dim() >= 3 else 1, k.shape[-3] if k.dim() >= 3 else 1
    same_heads = heads_q == heads_kv and (v.shape[-3] if v.dim() >= 3 else 1) == heads_kv
    grouped = enable_gqa and heads_kv > 0 and heads_q % heads_kv == 0
    flash_ok = (TORCH2 and has_aten("_scaled_dot_product_flash_attention") and dtype in (torch.float16, torch.bfloat16)
                and one_dtype and attn_mask is None and d <= 256 and k.shape[-1] == d and v.shape[-1] == d
                and (same_heads or grouped))
    eff_ok = (TORCH2 and has_aten("_scaled_dot_product_efficient_attention") and d <= 512 and one_dtype
              and same_heads)
    if mode == "flash" and flash_ok:
        return "flash"
    if mode == "efficient" and eff_ok:
        return "efficient"
    if mode == "math":
        return "math"
    if flash_ok:
        return "flash"
    if eff_ok:
        return "efficient"
    return "math"


def _repeat_kv(t, groups):
    """Key/value heads repeated to the query heads as transformers' repeat_kv does (expand, then a
    copying reshape); a view-free repeat_interleave would need the repeats' values."""
    if groups == 1:
        return t
    b, kv, s, d = t.shape
    return t[:, :, None, :, :].expand(b, kv, groups, s, d).reshape(b, kv * groups, s, d)


def sdpa_standin(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    # Under autocast SDPA runs in the autocast dtype (it is on autocast's lower-precision list,
    # aten/src/ATen/autocast_mode.cpp): every floating input is cast first, as a kernel of its own
    # where its dtype differs (a rotary embedding computed in fp32 leaves q and k in fp32). The
    # backend ops called below are on no autocast list, so the casts are made here.
    cast = _autocast_dtype()
    if cast is not None:
        query, key, value = (t.to(cast) if t.is_floating_point() and t.dtype != cast else t for t in (query, key, value))
        if attn_mask is not None and attn_mask.is_floating_point() and attn_mask.dtype != cast:
            attn_mask = attn_mask.to(cast)
        # Autocast's wrapper then calls SDPA with autocast excluded (autocast_mode.h, WrapFunction_:
        # ExcludeDispatchKeyGuard), so nothing inside it is cast again: the math path's fp32 upcast
        # (attention.cpp, _scaled_dot_product_attention_math, unless
        # torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp) keeps its products in fp32.
        with torch.autocast("cuda", enabled=False):
            return _sdpa_backend_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _sdpa_backend_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _sdpa_backend_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    backend = sdpa_backend(query, key, value, attn_mask, dropout_p, enable_gqa)
    # key/value heads fewer than the query heads: grouped-query attention (enable_gqa, or a model
    # relying on broadcasting a single key/value head)
    groups = query.shape[-3] // key.shape[-3] if key.shape[-3] else 1
    if backend == "flash":
        d = query.shape[-1]
        pad = (-d) % 8
        q, k, v = query, key, value
        if pad:
            q, k, v = (F.pad(t, (0, pad)) for t in (q, k, v))
        if scale is None:
            scale = 1.0 / math.sqrt(d)
        out = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False, scale=scale)[0]
        return out[..., :d] if pad else out
    if backend == "efficient":
        k, v = key, value
        bias = attn_mask
        if bias is not None and bias.dtype == torch.bool:
            # SDPA turns a boolean mask into an additive one (convert_boolean_attn_mask)
            bias = torch.where(bias, torch.zeros((), dtype=query.dtype, device=query.device),
                               torch.full((), float("-inf"), dtype=query.dtype, device=query.device))
        if bias is not None:
            # broadcast to [b, heads, s_q, s_kv] as a view, as SDPA's preprocessing does (its
            # alignment padding of the last dimension to 16 is not modelled)
            bias = bias.expand(query.shape[0], query.shape[1], query.shape[2], k.shape[2])
        need_lse = query.requires_grad or key.requires_grad or value.requires_grad
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            query, k, v, bias, need_lse, dropout_p, is_causal, scale=scale)[0]
    # math: fewer key/value heads are repeated only under enable_gqa; otherwise matmul broadcasts
    # them (a single head, Falcon's multi-query attention)
    return sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, groups if enable_gqa else 1)


def sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, groups):
    """SDPA's math path as aten/src/ATen/native/transformers/attention.cpp writes it
    (_scaled_dot_product_attention_math): q and k scaled by sqrt(scale), a boolean causal mask made
    additive, softmax, dropout, product with v. On 2.x the ATen op itself runs (its decomposition is
    what PyTorch dispatches); on 1.13 this Python mirror of it."""
    if TORCH2 and has_aten("_scaled_dot_product_attention_math"):
        try:
            return torch.ops.aten._scaled_dot_product_attention_math(
                query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale, enable_gqa=groups != 1)[0]
        except TypeError:
            key, value = _repeat_kv(key, groups), _repeat_kv(value, groups)
            return torch.ops.aten._scaled_dot_product_attention_math(
                query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale)[0]
    key, value = _repeat_kv(key, groups), _repeat_kv(value, groups)
    L, S, d = query.shape[-2], key.shape[-2], query.shape[-1]
    sf = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(d))
    # 1.13's fake tensors cannot unpack a saved Python-scalar operand in the backward: scale by a
    # 0-dim tensor instead (same kernels)
    sf = torch.full((), sf, dtype=query.dtype, device=query.device)
    q = query * sf
    mask = attn_mask
    if is_causal:
        mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(mask.logical_not(), float("-inf"))
    attn = torch.matmul(q, key.transpose(-2, -1) * sf)
    if mask is not None:
        attn = attn.add(mask)
    attn = torch.softmax(attn, -1)
    if dropout_p > 0.0:
        attn = F.dropout(attn, p=dropout_p)
    return torch.matmul(attn, value)


@contextlib.contextmanager
def sdpa_installed():
    saved = getattr(F, "scaled_dot_product_attention", None)
    F.scaled_dot_product_attention = sdpa_standin
    try:
        yield
    finally:
        if saved is None:
            del F.scaled_dot_product_attention
        else:
            F.scaled_dot_product_attention = saved


class RMSNorm(nn.Module):
    """nn.RMSNorm for PyTorch < 2.4 (model_llama.py uses it): the composite rms_norm of 2.x
    (aten/src/ATen/native/layer_norm.cpp: upcast, pow, mean, add eps, rsqrt, mul, cast back, mul weight)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(self.normalized_shape, device=device, dtype=dtype)) \
            if elementwise_affine else None

    def forward(self, x):
        dims = tuple(range(-len(self.normalized_shape), 0))
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        up = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
        r = torch.rsqrt(up.pow(2).mean(dims, keepdim=True).add_(eps))
        y = up.mul(r).type_as(x)
        return y.mul(self.weight) if self.weight is not None else y


@contextlib.contextmanager
def rmsnorm_installed():
    if hasattr(nn, "RMSNorm"):
        yield False
        return
    nn.RMSNorm = RMSNorm
    try:
        yield True
    finally:
        del nn.RMSNorm


# ---------------------------------------------------------------------------------------------
# foreach ops under fake tensors on 1.13: there are no meta kernels for them, so the fake mode
# runs the real CPU kernel on zero-filled tensors of full size (minutes and tens of GiB for a
# 70B-class layer). Their outputs are simple (in place: nothing; otherwise one tensor like each
# member of the first list), so the recorder makes them itself there. PyTorch 2.x has meta kernels.
FOREACH_SHIM = TORCH_VERSION < (2, 1)
_FOREACH_SIMPLE = ("add", "sub", "mul", "div", "addcmul", "addcdiv", "sqrt", "lerp", "neg", "zero", "copy",
                   "maximum", "minimum", "clamp_min", "clamp_max", "exp", "pow", "sign", "abs", "reciprocal",
                   "sigmoid", "log", "tanh")


def foreach_shim(func, args, kwargs):
    """(handled, result) for a simple foreach op on 1.13."""
    if not FOREACH_SHIM:
        return False, None
    name = func._schema.name.split("::")[-1]
    if not name.startswith("_foreach_"):
        return False, None
    base = name[len("_foreach_"):].rstrip("_")
    if base not in _FOREACH_SIMPLE:
        return False, None
    first = args[0] if args else kwargs.get("self")
    from torch._subclasses.fake_tensor import FakeTensor
    if not first or not all(isinstance(t, FakeTensor) for t in first):
        return False, None  # real tensors (--time): run the op
    if any(getattr(t, "constant", None) is not None for t in first):
        return False, None  # constant scalars (the optimizer's step counts): keep the fake mode's values
    if name.endswith("_"):
        return True, None
    return True, [torch.empty_like(t) for t in first]


@contextlib.contextmanager
def fallback_watch(notes):
    """Notes every op the fake mode could only run with its real kernel on zero-filled tensors."""
    try:
        import torch._subclasses.fake_tensor as ft
    except ImportError:
        yield
        return
    orig = getattr(ft, "run_fallback_kernel", None)
    if orig is None:
        yield
        return

    def spy(fake_mode, func, *a, **k):
        notes.add(f"{func} has no meta kernel in PyTorch {torch.__version__}: the fake mode ran its real kernel "
                  "on zero-filled tensors (time and host memory, not the result, are affected)")
        return orig(fake_mode, func, *a, **k)

    ft.run_fallback_kernel = spy
    try:
        yield
    finally:
        ft.run_fallback_kernel = orig
