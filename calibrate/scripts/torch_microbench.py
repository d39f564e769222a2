#!/usr/bin/env python3
"""PyTorch-side calibration: the kernels and host costs of PyTorch's own eager stacks.

trainsim-calibrate measures cuBLASLt, NCCL and raw CUDA launches in C++. What PyTorch adds on top
(its own elementwise, norm, attention and optimizer kernels; its dispatcher's host time per
operator and per module hook; its CPU AdamW) is measured here, with PyTorch, on the same machine:

  python3 calibrate/scripts/torch_microbench.py --out DIR [--parts kernels,attention,host,cpu_adam,fsdp_kernels]

writes DIR/torch_microbench.json (schema_version 1; every figure is the median of repeated samples
after warm-up, with its min and max). calibrate/scripts/merge_torch_calibration.py turns it into
profile sections. Byte counts (bytes read + written by the kernel, the convention of
trainsim-calibrate's kernel part) are stated per kernel below.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

BF16, FP32 = torch.bfloat16, torch.float32


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "samples": len(xs)}


def provenance(script, dev, **extra):
    """Where and with what a PyTorch calibration ran (the provenance object of its output)."""
    return {"script": script, "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": os.uname().nodename, "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "cuda": torch.version.cuda, **extra}


def cuda_time(fn, reps=10, samples=5, warmup=3):
    """Seconds per call of fn (GPU time, CUDA events), median of samples of reps calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3 / reps)
    return out


# ---------------------------------------------------------------------------------------------
# kernels: PyTorch's memory-bound kernels as the measured stacks call them


def kernels(dev):
    res = []

    def add(name, elements, nbytes, secs, note):
        res.append({"name": name, "elements": elements, "bytes": nbytes, "seconds": stats(secs),
                    "GBps_median": nbytes / statistics.median(secs) / 1e9, "bytes_counted": note})

    H = 4096
    for n in (1 << 22, 1 << 24, 1 << 26):  # 4 M, 16 M, 64 M elements
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
    for T in (2048, 8192):
        V = 50304
        logits = torch.randn(T, V, device=dev, dtype=FP32, requires_grad=True)
        tgt = torch.randint(0, V, (T,), device=dev)
        secs = cuda_time(lambda: torch.autograd.grad(F.cross_entropy(logits, tgt), (logits,)), reps=5)
        add("cross_entropy_fwd_bwd_fp32", T * V, 20 * T * V, secs,
            "log-softmax read 4 write 4, backward read 4 (saved) write 4, plus the grad's softmax pass read 4")
        del logits
    # GPU fused AdamW over fp32 parameters (params/s), as torch.optim.AdamW(fused=True).
    for n in (1 << 24, 1 << 27):
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
# first two at about half the rate of a plain cast or copy of one tensor (workloads/training_stacks.md).

# One layer's weights (out, in) and 1-D parameters: the measured GPT at hidden 1024 (biases and
# LayerNorms) and Llama 3 8B's and 70B's layers (RMSNorms), as reports/validation/scripts/model*.py build them.
FSDP_UNITS = {
    "gpt_h1024": ([(3072, 1024), (1024, 1024), (4096, 1024), (1024, 4096)], [3072, 1024, 4096, 1024, 1024, 1024, 1024, 1024]),
    "llama_h4096": ([(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)], [4096, 4096]),
    "llama_h8192": ([(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)], [8192, 8192]),
}


def fsdp_kernels(dev):
    res = []

    def add(name, unit, ranks, elements, nbytes, secs, note):
        res.append({"name": name, "unit": unit, "ranks": ranks, "elements": elements, "bytes": nbytes,
                    "seconds": stats(secs), "GBps_median": nbytes / statistics.median(secs) / 1e9, "bytes_counted": note})

    for unit, (mats, vecs) in FSDP_UNITS.items():
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


# ---------------------------------------------------------------------------------------------
# attention: flash attention through scaled_dot_product_attention, forward and backward


def attention(dev):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    res = []
    shapes = [(4, 16, 2048, 64), (2, 16, 2048, 64), (1, 16, 2048, 128), (1, 20, 2048, 128), (1, 32, 2048, 128),
              (1, 40, 2048, 128), (1, 48, 2048, 128), (1, 32, 4096, 128), (1, 32, 8192, 128), (8, 16, 1024, 64)]
    for b, a, s, d in shapes:
        q, k, v = (torch.randn(b, a, s, d, device=dev, dtype=BF16, requires_grad=True) for _ in range(3))
        go = torch.randn(b, a, s, d, device=dev, dtype=BF16)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            fwd = cuda_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
            both = cuda_time(lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                                         (q, k, v), go))
        fm, bm = statistics.median(fwd), statistics.median(both)
        # FLOPs as FlashAttention-2 counts them: forward 4 b a s^2 d, halved when causal; backward 2.5x.
        flops_f = 4.0 * b * a * s * s * d / 2
        res.append({"batch": b, "heads": a, "seq": s, "head_dim": d, "causal": True,
                    "forward_s": stats(fwd), "forward_backward_s": stats(both),
                    "forward_TFLOPs": flops_f / fm / 1e12, "backward_TFLOPs": 2.5 * flops_f / max(bm - fm, 1e-9) / 1e12,
                    "flops_counted": "forward 2 b a s^2 d (causal half of 4 b a s^2 d), backward 2.5 x forward"})
        del q, k, v, go
    return res


# ---------------------------------------------------------------------------------------------
# host: PyTorch's dispatch per operator and per module hook (host time; the GPU keeps up)


def host(dev):
    res = {}
    N = 3000

    def wall(fn, samples=5):
        out = []
        for _ in range(samples):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            out.append((time.perf_counter() - t0) / N * 1e6)
        return out
    x = torch.ones(16, device=dev)
    xg = torch.ones(16, device=dev, requires_grad=True)

    def ops():
        y = x
        for _ in range(N):
            y = y + 1.0

    def ops_grad():
        y = xg
        for _ in range(N):
            y = y + 1.0
    ops()
    ops_grad()
    res["op_no_grad_us"] = stats(wall(ops))
    res["op_autograd_us"] = stats(wall(ops_grad))
    lin = torch.nn.Linear(16, 16, device=dev)
    plain = torch.nn.Linear(16, 16, device=dev)
    lin.register_forward_pre_hook(lambda m, a: None)
    lin.register_forward_hook(lambda m, a, o: None)
    inp = torch.ones(4, 16, device=dev)

    def call(m):
        def f():
            for _ in range(N):
                m(inp)
        return f
    call(lin)()
    call(plain)()
    with_hooks = wall(call(lin))
    without = wall(call(plain))
    res["module_call_us"] = stats(without)
    res["module_call_with_two_hooks_us"] = stats(with_hooks)
    res["hook_us"] = (statistics.median(with_hooks) - statistics.median(without)) / 2
    res["note"] = ("host microseconds per operation: N = 3000 back-to-back calls on 16-element CUDA tensors, wall time "
                   "between synchronizations / N; hook_us = (module call with a forward pre-hook and a forward hook - "
                   "plain call) / 2")
    return res


# ---------------------------------------------------------------------------------------------
# cpu_adam: torch.optim.AdamW(fused=True) on CPU tensors, as FSDP2's CPUOffloadPolicy runs it


def _cpu_adam_worker(args):
    threads, params, steps, q = args
    import torch as t
    t.set_num_threads(threads)
    ps = [t.randn(params // 16, requires_grad=True) for _ in range(16)]
    for p in ps:
        p.grad = t.randn_like(p)
    opt = t.optim.AdamW(ps, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    opt.step()
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        out.append(time.perf_counter() - t0)
    q.put(out)


def cpu_adam():
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    res = []
    cores = os.cpu_count() or 1
    params = 1 << 26  # 64 M parameters per process
    for procs in (1, 2, 4):
        threads = max(1, cores // procs)
        q = ctx.Queue()
        ws = [ctx.Process(target=_cpu_adam_worker, args=((threads, params, 4, q),)) for _ in range(procs)]
        for w in ws:
            w.start()
        times = [q.get(timeout=300) for _ in ws]
        for w in ws:
            w.join()
        # Steps of all processes overlap (same start, same work): the slowest process's per-step time.
        per_step = [max(t[i] for t in times) for i in range(len(times[0]))]
        res.append({"what": "torch_adamw_fused_cpu", "processes": procs, "threads_per_process": threads,
                    "params_per_process": params, "step_s": stats(per_step),
                    "params_per_s_per_process": params / statistics.median(per_step),
                    "note": "fp32 parameters, gradients, exp_avg, exp_avg_sq; 16 tensors of 4 M each per process; "
                            "all processes step at once"})
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="kernels,attention,host,cpu_adam")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    doc = {"schema_version": 1, "kind": "trainsim.torch_microbench",
           "provenance": provenance("calibrate/scripts/torch_microbench.py", dev, cpu_count=os.cpu_count()),
           "errors": {}}
    for part in args.parts.split(","):
        t0 = time.time()
        try:
            doc[part] = {"kernels": kernels, "attention": attention, "host": host, "fsdp_kernels": fsdp_kernels}[part](dev) \
                if part != "cpu_adam" \
                else cpu_adam()
        except Exception as e:  # noqa: BLE001 - keep the other parts
            doc["errors"][part] = f"{type(e).__name__}: {e}"
        doc.setdefault("seconds", {})[part] = time.time() - t0
        print(f"[torch_microbench] {part}: {time.time() - t0:.1f} s", flush=True)
        with open(os.path.join(args.out, "torch_microbench.json"), "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
