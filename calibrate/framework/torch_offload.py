"""FSDP2 CPU offload as PyTorch 2.11 runs it: its host copies and its CPU AdamW (the torch_offload part).

FSDP2's foreach_reduce (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py) copies each
reduce-scatter output shard to the host with `new_sharded_grad.to("cpu", non_blocking=...)`:
non_blocking (a fresh pinned destination) when the shard's .grad does not exist yet (the step's
first micro-batch), blocking (a fresh *pageable* destination, the host thread waiting) when it
accumulates (every later micro-batch), followed by `.grad += new` on the CPU. Its optimizer is
torch.optim.AdamW(fused=True) over the rank's pinned CPU shards. The measured runs under
reports/validation/measured/ show both in their traces (Memcpy DtoH Device -> Pageable, aten::add_,
aten::_fused_adamw_). This module times them in the same form: in the framework driver (the torch_offload part) one
rank on GPU 0 with every core; under calibrate/scripts/torch_offload_bench.py (torchrun) every rank
of the group doing the same operation at the same moment (a barrier before every sample), cores /
ranks threads per rank as run_step.py sets them. One GPU cannot measure several ranks at once
(their copies share the host's memory bandwidth and their AdamW its cores): a profile from one GPU
has the one-rank curves, and the replay uses them for every rank count
(hwprofiles/torch_offload_calibration.hpp).

Parts (each figure the median over samples of the slowest rank's time):
- copies: per size, `x.to("cpu")` (blocking, fresh pageable), `x.to("cpu", non_blocking=True)` +
  synchronize (fresh pinned), `x.to(cuda, non_blocking=True)` from pinned + synchronize (FSDP2's
  all-gather copy-in), and `acc += y` on the CPU (the accumulation; acc pinned, y pageable).
- adam: AdamW(fused=True) over pinned fp32 parameters with pinned gradients: a set of tensors
  (count x elements) per rank, so the per-tensor cost and the per-parameter rate separate.
- rounds: the accumulating micro-batch's copy and add as the step makes them, not back to back: per
  size, rounds of [a one-element NCCL all-reduce and a stream synchronize (the layer's
  reduce-scatter, which the step's blocking copy waits for and which ties the ranks together),
  the blocking pageable `x.to("cpu")`, `acc += y`], the copy and the add each timed on every rank;
  per round the slowest rank's time of each (a synchronous step pays the slowest rank at every
  layer), the mean over a sample's rounds, the median over samples. In `copies` the adds of
  all ranks run back to back with every thread busy, which the step never does (one 4 x H200
  host measured about 6 ms for every add at 2 ranks there, where the step's adds took microseconds to a
  few ms: reports/validation/known_gaps.json).
- adam_model: AdamW(fused=True) over the tensors one rank holds of the validation GPT's shard
  (--model-layers, --model-hidden; 24 x 1024 by default), to check a costing of the shard tensor by
  tensor from `adam`'s sets against the optimizer over the shard itself.
- autograd_rounds: the same rounds run where FSDP2 runs them, inside the backward pass: a chain of
  autograd Functions on a CUDA tensor, each Function's backward one round, so the rounds run on
  autograd's CUDA device thread (FSDP2's post-backward hook runs there: the step traces show its
  `aten::add_` on another thread than the step's), with their own OpenMP team. One 4 x H200
  host added a 4-16 MiB shard in 0.14-0.3 ms in `rounds` while the step's own adds of 2-8 MB weight
  shards, on autograd's thread, took 2.7 ms on average (in the profiled offload steps).
sections_offload.py turns the records (a list of one document per rank count) into
calibration.torch_offload.
"""
import os
import statistics
import threading
import time

import torch
import torch.distributed as dist

MiB = 1 << 20
# Sizes in bytes (fp32 shards): below, at and above glibc's largest dynamic mmap threshold
# (32 MiB, DEFAULT_MMAP_THRESHOLD_MAX on 64-bit), which decides whether a freed buffer is reused.
COPY_SIZES = [1 * MiB, 4 * MiB, 16 * MiB, 25 * MiB, 30 * MiB, 34 * MiB, 37.5 * MiB, 50 * MiB, 64 * MiB, 128 * MiB]
# (tensors, elements per tensor) per rank.
ADAM_SETS = [(16, 1 << 22), (256, 1 << 18), (1024, 1 << 16), (1024, 1 << 10), (256, 1 << 10)]


def grouped():
    """Whether ranks run together (torchrun); the framework driver runs one rank, no process group."""
    return dist.is_available() and dist.is_initialized()


def barrier():
    if grouped():
        dist.barrier()


def slowest(t):
    """The slowest rank's time for this sample."""
    if not grouped():
        return t
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, t)
    return max(out)


def gathered(x):
    """Every rank's x (one rank: its own)."""
    if not grouped():
        return [x]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, x)
    return out


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "samples": len(xs)}


def timed(fn, reps, samples, sync):
    fn()
    if sync:
        torch.cuda.synchronize()
    xs = []
    for _ in range(samples):
        barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        if sync:
            torch.cuda.synchronize()
        xs.append(slowest((time.perf_counter() - t0) / reps))
    return xs


def copies(dev, samples):
    res = []
    for nbytes in COPY_SIZES:
        n = int(nbytes) // 4
        x = torch.randn(n, device=dev)
        pinned = torch.empty(n, pin_memory=True).copy_(x.cpu())
        acc = torch.zeros(n, pin_memory=True)
        y = x.to("cpu")
        reps = 4 if nbytes >= 32 * MiB else 8
        row = {"bytes": int(nbytes)}

        def pageable():
            z = x.to("cpu")
            del z

        def pinned_d2h():
            z = x.to("cpu", non_blocking=True)
            torch.cuda.current_stream().synchronize()
            del z

        def h2d():
            z = pinned.to(dev, non_blocking=True)
            del z

        def add():
            acc.add_(y)

        for name, fn, sync in (("d2h_pageable", pageable, False), ("d2h_pinned", pinned_d2h, False),
                               ("h2d_pinned", h2d, True), ("cpu_add", add, False)):
            xs = timed(fn, reps, samples, sync)
            row[name + "_s"] = stats(xs)
            row[name + "_GBps"] = nbytes / statistics.median(xs) / 1e9
        res.append(row)
        del x, pinned, acc, y
        torch.cuda.empty_cache()
    return res


class _Round(torch.autograd.Function):
    """Identity forward; its backward runs one round (synchronized_rounds' backward form, the
    `autograd_rounds` part)."""
    @staticmethod
    def forward(ctx, x, one_round):
        ctx.one_round = one_round
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        ctx.one_round()
        return g, None


def synchronized_rounds(dev, samples, nccl, in_backward):
    """Per size: the step's accumulating copy and add in synchronized rounds, run one after the
    other on this thread (`rounds`) or each inside a backward Function, on autograd's thread
    (`autograd_rounds`; module docstring)."""
    res = []
    tiny = torch.ones(1, device=dev)
    main_thread = threading.get_native_id()
    for nbytes in COPY_SIZES:
        n = int(nbytes) // 4
        x = torch.randn(n, device=dev)
        acc = torch.zeros(n, pin_memory=True)
        per_sample = 4 if nbytes >= 32 * MiB else 24  # 24: the validation model's layers
        times, threads = [], set()

        def one_round():
            if nccl is not None:
                dist.all_reduce(tiny, group=nccl)
            torch.cuda.current_stream().synchronize()
            t0 = time.perf_counter()
            y = x.to("cpu")
            t1 = time.perf_counter()
            acc.add_(y)
            t2 = time.perf_counter()
            del y
            times.append((t1 - t0, t2 - t1))
            threads.add(threading.get_native_id())

        def sample(count):
            times.clear()
            if in_backward:
                h = torch.zeros(1, device=dev, requires_grad=True)
                for _ in range(count):
                    h = _Round.apply(h, one_round)
                h.sum().backward()
            else:
                for _ in range(count):
                    one_round()
            return list(times)

        sample(per_sample if in_backward else 1)  # warm-up
        copy_xs, add_xs = [], []
        for _ in range(samples):
            everyone = gathered(sample(per_sample))
            # A synchronous step pays the slowest rank at every layer: per round, the slowest rank.
            copy_xs.append(statistics.mean(max(r[i][0] for r in everyone) for i in range(per_sample)))
            add_xs.append(statistics.mean(max(r[i][1] for r in everyone) for i in range(per_sample)))
        row = {"bytes": int(nbytes), "rounds_per_sample": per_sample}
        if in_backward:
            row["on_main_thread"] = main_thread in threads
        row.update({"d2h_pageable_s": stats(copy_xs), "d2h_pageable_GBps": nbytes / statistics.median(copy_xs) / 1e9,
                    "cpu_add_s": stats(add_xs), "cpu_add_GBps": nbytes / statistics.median(add_xs) / 1e9})
        res.append(row)
        del x, acc
        torch.cuda.empty_cache()
    return res


def adam(samples):
    res = []
    for tensors, elems in ADAM_SETS:
        ps = [torch.nn.Parameter(torch.randn(elems).pin_memory()) for _ in range(tensors)]
        for p in ps:
            p.grad = torch.randn(elems).pin_memory()
        opt = torch.optim.AdamW(ps, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
        xs = timed(opt.step, 1, samples, False)
        params = tensors * elems
        res.append({"tensors": tensors, "elements_per_tensor": elems, "params": params, "step_s": stats(xs),
                    "params_per_s": params / statistics.median(xs)})
        del opt, ps
    return res


def gpt_shard(layers, hidden, vocab, seq, ranks):
    """Elements of each parameter tensor a rank holds of the validation GPT under FSDP2
    (reports/validation/scripts/model.py; every tensor sharded on its own, 1/ranks rounded up):
    token and position embeddings, per layer two LayerNorms (weight, bias), fused QKV and the
    output projection with biases, the MLP's two matrices with biases, and the final LayerNorm."""
    h = hidden
    layer = [h, h, 3 * h * h, 3 * h, h * h, h, h, h, 4 * h * h, 4 * h, 4 * h * h, h]
    return [-(-e // ranks) for e in [vocab * h, seq * h] + layer * layers + [h, h]]


def adam_model(samples, ranks, layers, hidden):
    """AdamW(fused=True) over the GPT shard's own tensors (gpt_shard), timed as `adam` times its
    sets: what a replay costing the shard tensor by tensor from `adam`'s sets should predict."""
    sizes = gpt_shard(layers, hidden, 50304, 2048, ranks)
    ps = [torch.nn.Parameter(torch.randn(e).pin_memory()) for e in sizes]
    for p in ps:
        p.grad = torch.randn(p.numel()).pin_memory()
    opt = torch.optim.AdamW(ps, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    xs = timed(opt.step, 1, samples, False)
    return {"layers": layers, "hidden": hidden, "tensors": len(sizes), "params": sum(sizes),
            "elements": sorted(set(sizes)), "step_s": stats(xs)}



# Parts of a run at 1 and 2 sizes: the copies and AdamW make the section; the accumulating
# micro-batch's rounds on autograd's thread replace the back-to-back copies' pageable copy and add.
OFFLOAD_PARTS = (("copies", "adam"), ("copies", "adam", "autograd_rounds"))


def offload(dev, sizes=len(OFFLOAD_PARTS), progress=lambda done, total: None):
    parts = OFFLOAD_PARTS[sizes - 1]
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    doc = {"ranks": 1, "threads_per_rank": torch.get_num_threads(), "provenance": {"cpu_count": cores}, "seconds": {}}
    runs = {"copies": lambda: copies(dev, 5), "adam": lambda: adam(5),
            "autograd_rounds": lambda: synchronized_rounds(dev, 5, None, in_backward=True)}
    for i, part in enumerate(parts):
        progress(i, len(parts))
        t0 = time.time()
        doc[part] = runs[part]()
        doc["seconds"][part] = time.time() - t0
    return [doc]
