"""A PyTorch layer's own kernels, timed in the layouts the layer runs them (the torch_layer_kernels
part).

torch_kernels.py times PyTorch's kernels on contiguous tensors of their own. A transformer layer as
the PyTorch stacks run it (workloads/stacks/training_stacks.md, autocast, "The layer's kernels and
layouts"; reports/validation/scripts/model.py and model_llama.py) runs some kernels that a
contiguous bench does not have, or in layouts it does not use:

- the bias gradients of its Linears: grad_output summed over the tokens (a column reduction);
- the residual joins under autocast: an fp32 residual plus a bf16 branch output, mixed dtypes;
- the backward of splitting a fused projection's output (QKV, SwiGLU's gate and up): a cat;
- SwiGLU and rotary embeddings over views of a fused projection's output (rows strided by the
  fused width), so PyTorch's elementwise kernels take their strided path;
- flash attention over Q, K and V that are views of the fused QKV output, [b, s, heads, d]
  transposed, with the output gradient arriving in the layout flash attention wrote its output.

Each figure is the median of 5 samples of 10 calls after 3 warm-up calls (timing.cuda_time).
sections.py takes the kernels the replay costs by name (sections.LAYER_KERNELS) into
calibration.kernels and the attention for the sequence lengths the in-step part does not run.
"""
import statistics

import torch
import torch.nn.functional as F

from .timing import BF16, FP32, cuda_time, stats


def rotate_half(t):
    d = t.shape[-1]
    return torch.cat((-t[..., d // 2:], t[..., : d // 2]), dim=-1)


def kernels(dev):
    res = []

    def add(name, shape, nbytes, secs, note):
        res.append({"name": name, "shape": shape, "bytes": nbytes, "seconds": stats(secs),
                    "GBps_median": nbytes / statistics.median(secs) / 1e9, "bytes_counted": note})

    for family in (bias_grads, mixed_adds, split_cats, swiglu_split, rotary_split):
        try:
            family(dev, add)
        except Exception as e:  # noqa: BLE001 - keep the other families
            res.append({"name": "error", "family": family.__name__, "error": f"{type(e).__name__}: {e}"})
        torch.cuda.empty_cache()
    return res


def bias_grads(dev, add):
    """A Linear's bf16 output gradient [tokens, out] summed over the tokens (what autograd runs for
    F.linear's bias under autocast), at the measured models' widths."""
    for rows, cols in ((2048, 1024), (8192, 1024), (8192, 3072), (8192, 4096), (16384, 8192), (16384, 16384)):
        g = torch.randn(rows, cols, device=dev, dtype=BF16)
        add("bias_grad_bf16", [rows, cols], 2 * rows * cols, cuda_time(lambda: g.sum(0)),
            "read 2 per gradient element (the [out] result left out)")
        del g


def mixed_adds(dev, add):
    """The residual join under autocast: an fp32 residual plus a bf16 branch output."""
    for n in (1 << 22, 1 << 24, 1 << 26):
        x32 = torch.randn(n, device=dev, dtype=FP32)
        y16 = torch.randn(n, device=dev, dtype=BF16)
        add("add_fp32_bf16", [n], 10 * n, cuda_time(lambda: x32 + y16),
            "read 4 + 2, write 4 per element (fp32 residual + bf16 branch -> fp32)")
        del x32, y16


def split_cats(dev, add):
    """The backward of a split of a fused projection's output: the parts' gradients concatenated
    ([tokens, widths...] -> [tokens, sum]); GPT's QKV, Llama 3 8B's and 70B's QKV and gate-up."""
    for rows, widths in ((8192, (1024, 1024, 1024)), (2048, (4096, 1024, 1024)), (2048, (8192, 1024, 1024)),
                         (2048, (14336, 14336)), (2048, (28672, 28672))):
        parts = [torch.randn(rows, w, device=dev, dtype=BF16) for w in widths]
        total = rows * sum(widths)
        add("split_cat_bf16", [rows, *widths], 4 * total, cuda_time(lambda: torch.cat(parts, dim=-1)),
            "read 2, write 2 per element")
        del parts


def swiglu_split(dev, add):
    """SwiGLU over the gate and up halves of the fused input GEMM's output [tokens, 2 f]."""
    for rows, f in ((2048, 2048), (2048, 14336), (4096, 14336), (2048, 28672)):
        gu = torch.randn(rows, 2 * f, device=dev, dtype=BF16, requires_grad=True)
        gy = torch.randn(rows, f, device=dev, dtype=BF16)
        n = rows * f

        def fwd():
            gate, up = gu.split(f, dim=-1)
            return F.silu(gate) * up

        def fwd_bwd():
            gate, up = gu.split(f, dim=-1)
            return torch.autograd.grad(F.silu(gate) * up, (gate, up), gy)
        with torch.no_grad():
            add("swiglu_split_fwd_bf16", [rows, f], 6 * n, cuda_time(fwd), "read 2 + 2, write 2 per output element")
        add("swiglu_split_fwd_bwd_bf16", [rows, f], 16 * n, cuda_time(fwd_bwd),
            "forward read 2 + 2 write 2; backward read 2 + 2 + 2, write 2 + 2 per output element (the split's cat not included)")
        del gu, gy


def rotary_split(dev, add):
    """Rotary embeddings (rotate-half form) on Q, a view of the fused QKV output; cos and sin [s, 1, d]."""
    for b, s, heads, kv, d in ((1, 2048, 32, 8, 128), (2, 2048, 32, 8, 128), (1, 2048, 64, 8, 128), (4, 2048, 32, 8, 128)):
        h = heads * d
        qkv = torch.randn(b, s, h + 2 * kv * d, device=dev, dtype=BF16, requires_grad=True)
        cos = torch.randn(s, 1, d, device=dev, dtype=BF16)
        sin = torch.randn(s, 1, d, device=dev, dtype=BF16)
        go = torch.randn(b, s, heads, d, device=dev, dtype=BF16)
        n = b * s * h

        def rotated():
            q = qkv.split((h, kv * d, kv * d), dim=-1)[0].view(b, s, heads, d)
            return q, q * cos + rotate_half(q) * sin

        def fwd_bwd():
            q, out = rotated()
            return torch.autograd.grad(out, q, go)
        with torch.no_grad():
            add("rotary_split_fwd_bf16", [b, s, heads, d], 10 * n, cuda_time(lambda: rotated()[1]),
                "read q, cos, sin, write out (8 bytes) + rotate-half copy (2) per element of Q")
        add("rotary_split_fwd_bwd_bf16", [b, s, heads, d], 20 * n, cuda_time(fwd_bwd),
            "forward 10 + backward 10 bytes per element of Q, as the forward counts them")
        del qkv, cos, sin, go


# (batch, heads, key/value heads, seq, head_dim): torch_microbench.py's shapes (multi-head), then
# the grouped-query shapes of the measured Llama rows.
ATTENTION_SHAPES = [(4, 16, 16, 2048, 64), (2, 16, 16, 2048, 64), (1, 16, 16, 2048, 128), (1, 20, 20, 2048, 128),
                    (1, 32, 32, 2048, 128), (1, 40, 40, 2048, 128), (1, 48, 48, 2048, 128), (1, 32, 32, 4096, 128),
                    (1, 32, 32, 8192, 128), (8, 16, 16, 1024, 64)]
GQA_SHAPES = [(1, 32, 8, 2048, 128), (2, 32, 8, 2048, 128), (1, 64, 8, 2048, 128)]


def flash_record(b, a, kv, s, d, fwd, both):
    fm, bm = statistics.median(fwd), statistics.median(both)
    flops_f = 4.0 * b * a * s * s * d / 2  # FlashAttention-2's count, halved by the causal mask
    return {"batch": b, "heads": a, "kv_heads": kv, "seq": s, "head_dim": d, "causal": True,
            "forward_s": stats(fwd), "forward_backward_s": stats(both),
            "forward_TFLOPs": flops_f / fm / 1e12, "backward_TFLOPs": 2.5 * flops_f / max(bm - fm, 1e-9) / 1e12,
            "flops_counted": "forward 2 b a s^2 d (causal half of 4 b a s^2 d), backward 2.5 x forward"}


def flash_model_layout(dev, b, a, kv, s, d):
    """Q, K, V as views of one fused [b, s, (a + 2 kv) d] output; the output gradient [b, s, a, d]."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qkv = torch.randn(b, s, (a + 2 * kv) * d, device=dev, dtype=BF16, requires_grad=True)
    go = torch.randn(b, s, a, d, device=dev, dtype=BF16).transpose(1, 2)

    def views():
        q, k, v = qkv.split((a * d, kv * d, kv * d), dim=-1)
        return (q.view(b, s, a, d).transpose(1, 2), k.view(b, s, kv, d).transpose(1, 2), v.view(b, s, kv, d).transpose(1, 2))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv != a)

    def both():
        q, k, v = views()
        return torch.autograd.grad(attend(q, k, v), (q, k, v), go)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with torch.no_grad():
            fwd = cuda_time(lambda: attend(*views()))
        fb = cuda_time(both)
    del qkv, go
    return flash_record(b, a, kv, s, d, fwd, fb)


def flash_contiguous(dev, b, a, s, d):
    """torch_microbench.py's layout: Q, K, V contiguous [b, a, s, d] leaves, the gradient likewise."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (torch.randn(b, a, s, d, device=dev, dtype=BF16, requires_grad=True) for _ in range(3))
    go = torch.randn(b, a, s, d, device=dev, dtype=BF16)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        fwd = cuda_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        fb = cuda_time(lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), go))
    del q, k, v, go
    return flash_record(b, a, a, s, d, fwd, fb)


def guarded(fn, *shape):
    try:
        return fn(*shape)
    except Exception as e:  # noqa: BLE001 - keep the other shapes
        return {"error": f"{type(e).__name__}: {e}", "shape": list(shape[1:])}


def attention(dev):
    return [guarded(flash_model_layout, dev, *shape) for shape in ATTENTION_SHAPES + GQA_SHAPES]




def layer(dev, sizes=2, progress=lambda done, total: None):
    """Size 1: the kernels; size 2: also flash attention in the layer's layout."""
    progress(0, sizes)
    records = {"kernels": kernels(dev), "attention": []}
    torch.cuda.empty_cache()
    if sizes >= 2:
        progress(1, sizes)
        records["attention"] = attention(dev)
    return records
