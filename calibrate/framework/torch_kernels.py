"""PyTorch's memory-bound kernels as the measured stacks call them, and FSDP2's own kernels.

Measured on GPU 0; each figure is the median of repeated samples after warm-up (timing.cuda_time).
Byte counts (bytes read + written by the kernel, the convention of trainsim-calibrate's kernel
part) are stated per kernel. sections.kernel_curves turns the records into calibration.kernels
curves named "torch_<kernel>".
"""
import statistics

import torch
import torch.nn.functional as F

from .timing import BF16, FP32, cuda_time, stats

# ---------------------------------------------------------------------------------------------
# kernels: PyTorch's memory-bound kernels as the measured stacks call them


# Elements per tensor of the kernel sweep; a run of `sizes` sizes takes the first ones (and as many
# of the cross-entropy and AdamW sizes, at most two).
KERNEL_ELEMENTS = (1 << 22, 1 << 24, 1 << 26)  # 4 M, 16 M, 64 M elements


def kernels(dev, sizes=len(KERNEL_ELEMENTS), progress=lambda done, total: None):
    res = []
    steps = sizes + 2 * min(sizes, 2)

    def add(name, elements, nbytes, secs, note):
        res.append({"name": name, "elements": elements, "bytes": nbytes, "seconds": stats(secs),
                    "GBps_median": nbytes / statistics.median(secs) / 1e9, "bytes_counted": note})

    H = 4096
    for i, n in enumerate(KERNEL_ELEMENTS[:sizes]):
        progress(i, steps)
        rows = n // H
        x32 = torch.randn(n, device=dev, dtype=FP32)
        y32 = torch.randn(n, device=dev, dtype=FP32)
        x16 = x32.to(BF16)
        y16 = y32.to(BF16)
        add("cast_fp32_to_bf16", n, 6 * n, cuda_time(lambda: x32.to(BF16)), "read 4 + write 2 per element")
        add("cast_bf16_to_fp32", n, 6 * n, cuda_time(lambda: x16.to(FP32)), "read 2 + write 4 per element")
        add("add_fp32", n, 12 * n, cuda_time(lambda: x32 + y32), "read 4 + 4, write 4")
        add("add_inplace_fp32", n, 12 * n, cuda_time(lambda: x32.add_(y32)), "read 4 + 4, write 4 (gradient accumulation)")
        add("add_bf16", n, 6 * n, cuda_time(lambda: x16 + y16), "read 2 + 2, write 2")
        add("copy_fp32", n, 8 * n, cuda_time(lambda: y32.copy_(x32)), "read 4, write 4")
        add("gelu_fwd_bf16", n, 4 * n, cuda_time(lambda: F.gelu(x16)), "read 2, write 2")
        g16 = torch.randn_like(x16)
        add("gelu_bwd_bf16", n, 6 * n, cuda_time(lambda: torch.ops.aten.gelu_backward(g16, x16)), "read 2 + 2, write 2")
        a16 = x16.view(rows, H)
        b16 = y16.view(rows, H)
        add("swiglu_fwd_bf16", n, 6 * n, cuda_time(lambda: F.silu(a16) * b16), "read 2 + 2, write 2 (two kernels)")
        # LayerNorm and RMSNorm over rows of H, forward alone and forward + backward.
        for dt, tag, eb in ((FP32, "fp32", 4), (BF16, "bf16", 2)):
            x = torch.randn(rows, H, device=dev, dtype=dt)
            w = torch.ones(H, device=dev, dtype=dt, requires_grad=True)
            bias = torch.zeros(H, device=dev, dtype=dt, requires_grad=True)
            xg = x.clone().requires_grad_(True)
            gy = torch.randn_like(x)
            add(f"layernorm_fwd_{tag}", n, 2 * eb * n, cuda_time(lambda: F.layer_norm(x, (H,), w.detach(), bias.detach())),
                f"read {eb}, write {eb} per element")
            fb = cuda_time(lambda: torch.autograd.grad(F.layer_norm(xg, (H,), w, bias), (xg, w, bias), gy))
            add(f"layernorm_fwd_bwd_{tag}", n, 5 * eb * n, fb, f"forward 2 x {eb} + backward read 2 x {eb}, write {eb} per element")
            add(f"rmsnorm_fwd_{tag}", n, 2 * eb * n, cuda_time(lambda: F.rms_norm(x, (H,), w.detach())),
                f"read {eb}, write {eb} per element")
            fb = cuda_time(lambda: torch.autograd.grad(F.rms_norm(xg, (H,), w), (xg, w), gy))
            add(f"rmsnorm_fwd_bwd_{tag}", n, 5 * eb * n, fb, f"forward 2 x {eb} + backward read 2 x {eb}, write {eb} per element")
        # SwiGLU forward + backward, rotary embedding (rotate-half form, as Llama's reference code).
        ag = a16.clone().requires_grad_(True)
        bg = b16.clone().requires_grad_(True)
        gy16 = torch.randn_like(a16)
        add("swiglu_fwd_bwd_bf16", n, 16 * n,
            cuda_time(lambda: torch.autograd.grad(F.silu(ag) * bg, (ag, bg), gy16)),
            "forward read 2 + 2 write 2; backward read 2 + 2 + 2, write 2 + 2 per element")
        d = 128
        q = torch.randn(n // d, d, device=dev, dtype=BF16)
        cos = torch.randn(n // d, d, device=dev, dtype=BF16)
        sin = torch.randn(n // d, d, device=dev, dtype=BF16)

        def rot(t):
            t1, t2 = t[..., : d // 2], t[..., d // 2:]
            return torch.cat((-t2, t1), dim=-1)
        add("rotary_fwd_bf16", n, 10 * n, cuda_time(lambda: q * cos + rot(q) * sin),
            "read q, cos, sin, write out (8 bytes) + rotate-half copy (2); PyTorch eager runs 5 kernels")
        del x32, y32, x16, y16, a16, b16, ag, bg, q, cos, sin
        torch.cuda.empty_cache()
    # Cross-entropy over fp32 logits [T, V] (what the measured runs' loss does), forward + backward.
    for i, T in enumerate((2048, 8192)[:min(sizes, 2)]):
        progress(sizes + i, steps)
        V = 50304
        logits = torch.randn(T, V, device=dev, dtype=FP32, requires_grad=True)
        tgt = torch.randint(0, V, (T,), device=dev)
        secs = cuda_time(lambda: torch.autograd.grad(F.cross_entropy(logits, tgt), (logits,)), reps=5)
        add("cross_entropy_fwd_bwd_fp32", T * V, 20 * T * V, secs,
            "log-softmax read 4 write 4, backward read 4 (saved) write 4, plus the grad's softmax pass read 4")
        del logits
    # GPU fused AdamW over fp32 parameters (params/s), as torch.optim.AdamW(fused=True).
    for i, n in enumerate((1 << 24, 1 << 27)[:min(sizes, 2)]):
        progress(sizes + min(sizes, 2) + i, steps)
        ps = [torch.randn(n // 16, device=dev, requires_grad=True) for _ in range(16)]
        for p in ps:
            p.grad = torch.randn_like(p)
        opt = torch.optim.AdamW(ps, lr=1e-4, fused=True)
        secs = cuda_time(opt.step, reps=5)
        add("adamw_fused_fp32", n, 28 * n, secs, "param read+write 8, grad read 4, exp_avg and exp_avg_sq read+write 16")
        del ps, opt
        torch.cuda.empty_cache()
    return res


# ---------------------------------------------------------------------------------------------
# fsdp_kernels: FSDP2's own kernels around each all-gather and reduce-scatter, over one unit's
# tensors as FSDP2 holds them (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, 2.11):
# the foreach cast of the fp32 shards to bf16 and the foreach copy-in of those into the flat
# all-gather input (foreach_all_gather), the split_with_sizes_copy of the gathered buffer out into
# the unsharded parameters (foreach_all_gather_copy_out), and the chunk_cat of the unsharded bf16
# gradients into the fp32 reduce-scatter input (foreach_reduce). The validation traces show the
# first two at about half the rate of a plain cast or copy of one tensor (workloads/stacks/training_stacks.md).

# One layer's weights (out, in) and 1-D parameters: the measured GPT at hidden 1024 (biases and
# LayerNorms) and Llama 3 8B's and 70B's layers (RMSNorms), as reports/validation/scripts/model*.py build them.
FSDP_UNITS = {
    "gpt_h1024": ([(3072, 1024), (1024, 1024), (4096, 1024), (1024, 4096)], [3072, 1024, 4096, 1024, 1024, 1024, 1024, 1024]),
    "llama_h4096": ([(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)], [4096, 4096]),
    "llama_h8192": ([(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)], [8192, 8192]),
}


def fsdp_kernels(dev, sizes=len(FSDP_UNITS), progress=lambda done, total: None):
    """`sizes` units, the first ones of FSDP_UNITS, each at 2 and 4 ranks."""
    res = []

    def add(name, unit, ranks, elements, nbytes, secs, note):
        res.append({"name": name, "unit": unit, "ranks": ranks, "elements": elements, "bytes": nbytes,
                    "seconds": stats(secs), "GBps_median": nbytes / statistics.median(secs) / 1e9, "bytes_counted": note})

    for i, (unit, (mats, vecs)) in enumerate(list(FSDP_UNITS.items())[:sizes]):
        progress(i, sizes)
        shapes = [list(m) for m in mats] + [[v] for v in vecs]
        for N in (2, 4):
            try:
                fsdp_unit_kernels(dev, add, unit, shapes, N)
            except Exception as e:  # noqa: BLE001 - keep the other units
                res.append({"name": "error", "unit": unit, "ranks": N, "error": f"{type(e).__name__}: {e}"})
            torch.cuda.empty_cache()
    return res


def fsdp_unit_kernels(dev, add, unit, shapes, N):
    """One unit's four kernels at N ranks (its shards are dim-0 cuts, as FSDP2's Shard(0))."""
    shard_shapes = [[-(-sh[0] // N)] + sh[1:] for sh in shapes]
    shards32 = [torch.randn(sh, device=dev, dtype=FP32) for sh in shard_shapes]
    n = sum(t.numel() for t in shards32)
    cast16 = [torch.empty(sh, device=dev, dtype=BF16) for sh in shard_shapes]
    add("foreach_cast_fp32_to_bf16", unit, N, n, 6 * n,
        cuda_time(lambda: torch._foreach_copy_(cast16, shards32)), "read 4, write 2 per shard element")
    flat_in = torch.empty(n, device=dev, dtype=BF16)
    views = [v.view(sh) for v, sh in zip(torch.split(flat_in, [t.numel() for t in cast16]), shard_shapes)]
    add("foreach_copy_bf16", unit, N, n, 4 * n,
        cuda_time(lambda: torch._foreach_copy_(views, cast16)), "read 2, write 2 per shard element (copy-in)")
    del shards32, cast16, flat_in, views
    # The gathered buffer [N, n] copied out into the unit's unsharded parameters.
    gathered = torch.empty(N, n, device=dev, dtype=BF16)
    sizes = [int(torch.Size(sh).numel()) for sh in shard_shapes]
    params = [torch.empty([N * sh[0]] + sh[1:], device=dev, dtype=BF16) for sh in shard_shapes]
    outs = [p.view(N, -1) for p in params]
    add("split_copy_bf16", unit, N, N * n, 4 * N * n,
        cuda_time(lambda: torch.split_with_sizes_copy(gathered, sizes, dim=1, out=outs)),
        "read 2, write 2 per unsharded element (copy-out)")
    # The unsharded bf16 gradients into the fp32 reduce-scatter input, N chunks.
    grads = [torch.randn([N * sh[0]] + sh[1:], device=dev, dtype=BF16) for sh in shard_shapes]
    rs_in = torch.empty(N, n, device=dev, dtype=FP32)
    add("chunk_cat_bf16_to_fp32", unit, N, N * n, 6 * N * n,
        cuda_time(lambda: torch._chunk_cat(grads, dim=0, num_chunks=N, out=rs_in)),
        "read 2, write 4 per unsharded element (reduce-scatter input)")
    del gathered, params, outs, grads, rs_in

