"""What an ATen op costs: its class, kernel count, bytes moved, FLOPs, GEMM and attention metadata.

Every formula here takes sizes that are either integers or `poly.Poly` expressions, so one code
path computes a capture's numbers and the expressions the C++ side evaluates (SCHEMA.md, "Ops").
Structural decisions (which class, which strides are 0, which operand is transposed) are taken
from the concrete integers of the capture, never from the expressions.
"""

DTYPE_BYTES = {
    "f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1,
    "u64": 8, "u32": 4, "u16": 2, "u8": 1,
    "bool": 1, "c64": 8, "c128": 16, "f8e4m3": 1, "f8e5m2": 1,
}

TORCH_DTYPE_NAMES = {
    "torch.float64": "f64", "torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
    "torch.int64": "i64", "torch.int32": "i32", "torch.int16": "i16", "torch.int8": "i8",
    "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64",
    "torch.bool": "bool", "torch.complex64": "c64", "torch.complex128": "c128",
    "torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2",
}

# The fixed set of op classes (SCHEMA.md, "Op classes").
OP_CLASSES = (
    "gemm", "batched_gemm", "attention_fwd", "attention_bwd", "elementwise", "reduction",
    "normalization", "softmax", "loss", "copy_cast", "index_gather", "fill", "alloc", "random",
    "foreach", "optimizer", "view", "sync", "host", "other",
)

GEMM_OPS = {"mm", "addmm", "_addmm_activation", "_scaled_mm", "_int_mm"}
BATCHED_GEMM_OPS = {"bmm", "baddbmm"}
ATTN_FWD_OPS = {
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_flash_attention_for_cpu": "flash_cpu",
    "_scaled_dot_product_efficient_attention": "efficient",
    "_scaled_dot_product_cudnn_attention": "cudnn",
    "_flash_attention_forward": "flash",
    "_efficient_attention_forward": "efficient",
    "_scaled_dot_product_fused_attention_overrideable": "fused",
}
ATTN_BWD_OPS = {k + "_backward": v for k, v in ATTN_FWD_OPS.items()}
NORM_OPS = {
    "native_layer_norm", "native_layer_norm_backward", "_fused_rms_norm", "_fused_rms_norm_backward",
    "native_group_norm", "native_group_norm_backward", "native_batch_norm", "native_batch_norm_backward",
    "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
}
SOFTMAX_OPS = {"_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "_safe_softmax"}
LOSS_OPS = {"nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward",
            "binary_cross_entropy", "binary_cross_entropy_backward", "mse_loss", "mse_loss_backward"}
REDUCTION_OPS = {"sum", "mean", "amax", "amin", "max", "min", "var_mean", "var", "std", "norm",
                 "linalg_vector_norm", "all", "any", "prod", "argmax", "argmin", "cumsum", "cumprod",
                 "logsumexp", "std_mean", "count_nonzero", "nansum"}
INDEX_OPS = {"embedding", "embedding_dense_backward", "index_select", "gather", "index", "index_add",
             "index_add_", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_put",
             "index_put_", "_index_put_impl_", "index_copy", "index_copy_", "embedding_backward",
             "_embedding_bag", "masked_scatter", "masked_select", "take", "scatter_reduce"}
COPY_OPS = {"_to_copy", "copy_", "clone", "cat", "stack", "repeat", "constant_pad_nd", "slice_scatter",
            "select_scatter", "select_backward", "slice_backward", "split_with_sizes_copy", "expand_copy",
            "contiguous", "_copy_from", "_copy_from_and_resize", "index_copy", "roll", "flip",
            "repeat_interleave", "_unsafe_index", "narrow_copy", "permute_copy", "as_strided_scatter",
            "diagonal_backward", "unfold_backward", "_chunk_cat", "new_empty_strided"}
FILL_OPS = {"zeros", "ones", "full", "fill_", "zero_", "zeros_like", "ones_like", "full_like",
            "new_zeros", "new_ones", "new_full", "arange", "scalar_tensor", "linspace", "eye", "fill"}
ALLOC_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted",
             "lift_fresh_copy", "resize_", "set_", "_unsafe_view"}
RANDOM_OPS = {"native_dropout", "native_dropout_backward", "bernoulli", "bernoulli_", "uniform_", "normal_",
              "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
              "exponential_", "random_", "_fused_dropout", "multinomial", "dropout"}
FUSED_OPTIMIZER_OPS = {"_fused_adamw_", "_fused_adam_", "_fused_sgd_", "_fused_adagrad_", "_fused_adamw",
                       "_fused_adam"}
SYNC_OPS = {"_local_scalar_dense", "item", "is_nonzero", "equal", "_assert_async"}
# Ops whose output shares its input's memory although the schema does not say so.
HIDDEN_ALIAS_OPS = {"_unsafe_view", "lift_fresh", "alias", "_reshape_alias", "detach"}

# PyTorch's multi_tensor_apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh): a launch covers at
# most depth_to_max_tensors[depth-1] tensors and kBlocksPerLaunch (320) chunks of kChunkSize
# (65536) elements; stated here so the C++ mirror uses the same numbers (SCHEMA.md, "Kernels").
MTA_CHUNK = 65536
MTA_MAX_BLOCKS = 320
MTA_MAX_TENSORS = (110, 64, 48, 36, 30)


def multi_tensor_apply_launches(numels, depth):
    """Kernel launches of one multi_tensor_apply over tensors of `numels` elements (ints)."""
    max_tensors = MTA_MAX_TENSORS[min(max(depth, 1), len(MTA_MAX_TENSORS)) - 1]
    launches = 0
    tensors = 0
    blocks = 0
    for n in numels:
        if n == 0:
            continue
        tensors += 1
        chunks = (n + MTA_CHUNK - 1) // MTA_CHUNK
        for c in range(chunks):
            blocks += 1
            last_chunk = c == chunks - 1
            tensors_full = tensors == max_tensors and last_chunk
            blocks_full = blocks == MTA_MAX_BLOCKS
            if tensors_full or blocks_full:
                launches += 1
                blocks = 0
                tensors = 0 if last_chunk else 1
    if blocks > 0:
        launches += 1
    return launches


def base_name(func_name):
    """'aten::addmm.default' -> 'addmm'; 'aten::add_.Tensor' -> 'add_'."""
    n = func_name.split("::", 1)[-1]
    return n.split(".", 1)[0]


def prod(xs):
    r = 1
    for x in xs:
        r = r * x
    return r


def unique_numel(shape, stride_concrete, shape_v):
    """Elements a strided tensor really covers: dimensions of stride 0 (broadcast) count once."""
    n = 1
    for sz_c, st_c, sz in zip(shape, stride_concrete, shape_v):
        if st_c != 0 or sz_c == 0:
            n = n * sz
    return n


def storage_numel(shape_c, shape_v, stride_v, offset_v):
    """Elements from the storage's start to a tensor's last element (its allocation when fresh)."""
    if any(s == 0 for s in shape_c):
        return 0
    n = offset_v + 1
    for sz, st in zip(shape_v, stride_v):
        n = n + (sz - 1) * st
    return n


def classify(name, rec):
    """The op class of an op record (see recorder.py for the record's fields)."""
    b = base_name(name)
    if rec.get("host"):
        return "host"
    if b in SYNC_OPS:
        return "sync"
    if rec.get("all_views"):
        return "view"
    if b in GEMM_OPS:
        return "gemm"
    if b in BATCHED_GEMM_OPS:
        return "batched_gemm"
    if b in ATTN_FWD_OPS:
        return "attention_fwd"
    if b in ATTN_BWD_OPS:
        return "attention_bwd"
    if b in FUSED_OPTIMIZER_OPS:
        return "optimizer"
    if b.startswith("_foreach_") or b == "_amp_foreach_non_finite_check_and_unscale_":
        return "foreach"
    if b in NORM_OPS:
        return "normalization"
    if b in SOFTMAX_OPS:
        return "softmax"
    if b in LOSS_OPS:
        return "loss"
    if b in RANDOM_OPS:
        return "random"
    if b in INDEX_OPS:
        return "index_gather"
    if b in ALLOC_OPS:
        return "alloc"
    if b in FILL_OPS:
        return "fill"
    if b in COPY_OPS:
        return "copy_cast"
    if b in REDUCTION_OPS:
        return "reduction"
    if rec.get("pointwise", True):
        return "elementwise"
    return "other"


class TV:
    """A tensor as the formulas see it: concrete shape/stride and value shape/stride (ints or Polys)."""

    __slots__ = ("shape_c", "stride_c", "shape", "stride", "offset", "dtype", "itemsize", "device")

    def __init__(self, t, shape, stride, offset):
        self.shape_c = t["shape"]
        self.stride_c = t["stride"]
        self.shape = shape
        self.stride = stride
        self.offset = offset
        self.dtype = t["dtype"]
        self.itemsize = DTYPE_BYTES.get(t["dtype"], 4)
        self.device = t.get("device")

    def numel(self):
        return prod(self.shape)

    def unique_bytes(self):
        return unique_numel(self.shape_c, self.stride_c, self.shape) * self.itemsize

    def bytes(self):
        return self.numel() * self.itemsize


def derive(rec, ins, outs, mutated):
    """Bytes, FLOPs and metadata of one op.

    rec: the op record (recorder.py); ins/outs: lists of TV (tensor inputs in argument order,
    outputs); mutated: the TVs of inputs the op writes in place. Returns a dict of the derived
    fields; values are ints or Polys as the TVs' sizes are.
    """
    name = rec["op"]
    b = base_name(name)
    cls = rec["class"]
    d = {"bytes_read": 0, "bytes_written": 0, "flops": 0}
    if cls in ("view", "alloc", "sync", "host"):
        return d
    fresh_outs = [o for o, is_new in zip(outs, rec["out_fresh"]) if is_new]
    written = sum((o.bytes() for o in fresh_outs), 0) + sum((m.bytes() for m in mutated), 0)
    read = sum((t.unique_bytes() for t in ins), 0)
    # FLOPs of a memory-bound op: nominally one per element (they are costed by bytes; SCHEMA.md,
    # "FLOPs"): of the first input for reductions, norms, softmax and losses, else of the first output
    # (the first written input for in-place ops)
    if cls in ("reduction", "normalization", "softmax", "loss") and ins:
        nominal = ins[0].numel()
    elif outs:
        nominal = outs[0].numel()
    elif mutated:
        nominal = mutated[0].numel()
    else:
        nominal = ins[0].numel() if ins else 0
    flops = nominal
    if cls == "gemm":
        A, B = _gemm_operands(b, ins)
        m, k = A.shape[-2], A.shape[-1]
        n = B.shape[-1]
        flops = 2 * m * n * k
        d["gemm"] = {"m": m, "n": n, "k": k, "batch": 1}
    elif cls == "batched_gemm":
        A, B = _gemm_operands(b, ins)
        bt, m, k = A.shape[0], A.shape[1], A.shape[2]
        n = B.shape[2]
        flops = 2 * bt * m * n * k
        d["gemm"] = {"m": m, "n": n, "k": k, "batch": bt}
    elif cls in ("attention_fwd", "attention_bwd"):
        off = 1 if cls == "attention_bwd" else 0
        q, k_, v = ins[off], ins[off + 1], ins[off + 2]
        bb, a, sq, hd = q.shape[0], q.shape[1], q.shape[2], q.shape[3]
        kvh, skv = k_.shape[1], k_.shape[2]
        causal = bool(rec.get("scalars", {}).get("is_causal", False))
        base = 4 * bb * a * sq * skv * hd  # two products of 2*s_q*s_kv*d per head (FlashAttention-2 Sec. 4)
        if causal:
            base = 2 * bb * a * sq * skv * hd  # half the score matrix
        if cls == "attention_fwd":
            flops = base
        else:
            flops = (5 * base) // 2  # backward = 2.5 x forward (five products instead of two)
        d["attention"] = {"b": bb, "heads": a, "kv_heads": kvh, "s_q": sq, "s_kv": skv, "head_dim": hd,
                          "head_dim_v": v.shape[3]}
    elif cls == "fill":
        read = 0
    elif cls == "index_gather":
        read, written = _index_bytes(b, rec, ins, outs, mutated, read, written)
    elif cls == "loss":
        read, written = _loss_bytes(b, rec, ins, outs, read, written)
    elif cls in ("foreach", "optimizer"):
        lists = rec.get("lists") or []
        first = [ins[i] for i in lists[0]] if lists else ins
        flops = sum((t.numel() for t in first), 0)
    d["bytes_read"] = read
    d["bytes_written"] = written
    d["flops"] = flops
    return d


def _gemm_operands(b, ins):
    if b in ("addmm", "_addmm_activation", "baddbmm"):
        return ins[1], ins[2]
    return ins[0], ins[1]


def _index_bytes(b, rec, ins, outs, mutated, read, written):
    if b == "embedding" and len(ins) >= 2:
        idx, out = ins[1], outs[0]
        return idx.unique_bytes() + out.bytes(), out.bytes()
    if b in ("index_select",) and len(ins) >= 2:
        out = outs[0]
        return ins[1].unique_bytes() + out.bytes(), out.bytes()
    if b == "gather" and len(ins) >= 2:
        out = outs[0]
        return ins[1].unique_bytes() + out.bytes(), out.bytes()
    if b == "embedding_dense_backward" and len(ins) >= 2:
        # zero-fills the whole [num_weights, h] gradient, then adds the gathered rows into it
        out = outs[0]
        return ins[0].unique_bytes() + ins[1].unique_bytes(), out.bytes()
    return read, written


def _loss_bytes(b, rec, ins, outs, read, written):
    if b in ("nll_loss_forward",) and len(ins) >= 2:
        x, tgt = ins[0], ins[1]
        picked = prod(x.shape[:-1]) * x.itemsize if len(x.shape_c) > 1 else x.itemsize
        return tgt.unique_bytes() + picked, written
    if b in ("nll_loss_backward",) and len(ins) >= 3:
        # reads the target and the incoming gradient; writes the whole [N, V] gradient (zero + scatter)
        grad_out, tgt = ins[0], ins[2]
        extra = sum((t.unique_bytes() for t in ins[3:]), 0)
        return grad_out.unique_bytes() + tgt.unique_bytes() + extra, written
    return read, written


def kernels(rec, ins_c, outs_c):
    """Kernel launches of one op on the GPU (SCHEMA.md, "Kernels"); concrete integers only."""
    cls = rec["class"]
    b = base_name(rec["op"])
    if cls in ("view", "alloc", "sync", "host"):
        return 0
    if cls in ("foreach", "optimizer"):
        lists = rec.get("lists") or []
        if not lists:
            return 1
        depth = len(lists) if b != "_amp_foreach_non_finite_check_and_unscale_" else 1
        numels = [prod(ins_c[i]["shape"]) for i in lists[0]]
        return multi_tensor_apply_launches(numels, depth)
    if cls == "attention_bwd":
        backend = ATTN_BWD_OPS.get(b, "")
        if backend == "flash":
            q, k = ins_c[1], ins_c[2]
            gqa = q["shape"][1] != k["shape"][1]
            # FlashAttention-2 mha_bwd: dot(dO, O) preprocess, the main kernel, dQ conversion; under
            # grouped-query attention two sums fold dK and dV of each group into its key/value head.
            return 3 + (2 if gqa else 0)
        return 1
    if cls == "normalization" and b.endswith("_backward"):
        return 2  # dX and the weight/bias gradients are separate kernels (LayerNorm, RMSNorm)
    if b == "nll_loss_backward":
        return 2  # zero-fill of the gradient, then the scatter
    if b == "embedding_dense_backward":
        return 1  # nominal: the CUDA path sorts the indices and launches several kernels
    return 1
