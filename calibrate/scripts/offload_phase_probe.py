#!/usr/bin/env python3
"""Where the FSDP2 CPU-offload step goes, on the host's clock, without the profiler (its
results left the tree: reports/HISTORY.md; what they found: workloads/stacks/training_stacks.md, "FSDP2").

The 2-GPU offload row (0.36 B GPT, 24 layers, micro-batch 4, 2 micro-batches a step, 32 threads a
rank, as reports/validation/scripts/run_step.py builds it) steps in 915-944 ms on a quiet host where
the replay predicts 572 ms. The profiler's own cost per operator hides where; this probe times the
step's parts with CPU timers only:

- on the main thread, each micro-batch's forward-and-loss call and backward() call, opt.step(),
  zero_grad and the closing synchronize;
- the FSDP2 parameter group's hooks and collectives wherever they run (main or autograd thread):
  pre/post forward, pre/post backward, finalize_backward, unshard, wait_for_unshard, reshard,
  foreach_all_gather, foreach_all_gather_copy_out, foreach_reduce (patched before fully_shard);
- with --split, inside each foreach_reduce, every torch function it calls (a TorchFunctionMode),
  timed call by call with the calling thread's minor page faults and the first tensor's bytes
  ([calls, seconds, thread's faults, bytes, process's faults] per function; each blocking copy
  apart with its destination's address and glibc chunk flags), and before a blocking device-to-host copy the wait for the current stream
  (the copy would wait for it anyway: the split moves that wait out of the copy's time, it adds none);
- CUDA events on the main stream at each phase's end (when the GPU finished what the host issued).

    torchrun --standalone --nproc-per-node 2 calibrate/scripts/offload_phase_probe.py --out DIR [--split]

writes DIR/offload_phase_probe_rank<R>.json per rank and DIR/fsdp2_source.txt (the installed FSDP2
functions the probe times, as this torch has them).
"""
import argparse
import contextlib
import ctypes
import functools
import inspect
import os
import resource
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reports", "validation", "scripts"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import run_step  # noqa: E402
import run_step_doc  # noqa: E402
import run_step_stacks  # noqa: E402
from model import loss_fn  # noqa: E402

CFG = dict(stack="fsdp2-offload", layers=24, hidden=1024, heads=16, vocab=50304, seq=2048, micro_batch=4)
MICRO_BATCHES = 2
MAIN = threading.get_ident()


class Recorder:
    """Spans (label, start, end, on main thread, details) relative to the step's start, while on."""

    def __init__(self):
        self.on = False
        self.t0 = 0.0
        self.spans = []
        self.micro_batch = -1

    def add(self, label, start, end, details=None):
        if self.on:
            self.spans.append([label, round(start - self.t0, 7), round(end - self.t0, 7),
                               threading.get_ident() == MAIN, self.micro_batch, details])


REC = Recorder()
SPLIT = [False]


def dest_is_cpu(args, kwargs):
    for v in list(args[1:]) + list(kwargs.values()):
        if isinstance(v, torch.device) and v.type == "cpu":
            return True
        if isinstance(v, str) and v == "cpu":
            return True
    return False


def is_blocking_d2h(name, args, kwargs):
    """A device-to-host copy that makes the host wait: `.to(cpu)` of a CUDA tensor or `cpu.copy_(cuda)`,
    without non_blocking."""
    if name == "to" and args and isinstance(args[0], torch.Tensor):
        return args[0].is_cuda and dest_is_cpu(args, kwargs) and not kwargs.get("non_blocking", False)
    if name == "copy_" and len(args) > 1 and isinstance(args[0], torch.Tensor) and isinstance(args[1], torch.Tensor):
        non_blocking = kwargs.get("non_blocking", args[2] if len(args) > 2 else False)
        return args[0].device.type == "cpu" and args[1].is_cuda and not non_blocking
    return False


def glibc_chunk(address):
    """[flags, size] of the glibc malloc chunk whose memory starts at `address` (c10's CPU allocator
    takes it from posix_memalign): the size word just before it holds PREV_INUSE (1), IS_MMAPPED (2,
    a chunk mmapped for itself) and NON_MAIN_ARENA (4, a chunk of a per-thread arena's heap)."""
    word = ctypes.c_uint64.from_address(address - 8).value
    return [word & 7, word & ~7]


class CallSplit(TorchFunctionMode):
    """Inside one foreach_reduce: calls, seconds, the thread's minor page faults and the first tensor
    argument's bytes per torch function (by name and that tensor's device), and the stream waits before blocking device-to-host copies."""

    def __init__(self):
        super().__init__()
        self.totals = {}
        # each blocking copy: [bytes, thread's faults, seconds, destination address, its glibc chunk's
        # flags, that chunk's size] (glibc_chunk)
        self.copies = []

    def note(self, key, seconds, faults=0, nbytes=0, process_faults=0):
        n, s, f, b, pf = self.totals.get(key, (0, 0.0, 0, 0, 0))
        self.totals[key] = (n + 1, s + seconds, f + faults, b + nbytes, pf + process_faults)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        where = first.device.type if first is not None else "-"
        blocking_d2h = is_blocking_d2h(name, args, kwargs)
        if blocking_d2h:
            s = time.perf_counter()
            torch.cuda.current_stream().synchronize()
            self.note("wait_before_blocking_d2h", time.perf_counter() - s)
        faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        process_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        s = time.perf_counter()
        out = func(*args, **kwargs)
        seconds = time.perf_counter() - s
        faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - faults
        process_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - process_faults
        nbytes = first.numel() * first.element_size() if first is not None else 0
        self.note(f"{name}@{where}" + (" blocking_d2h" if blocking_d2h else ""), seconds, faults, nbytes,
                  process_faults)
        if blocking_d2h and isinstance(out, torch.Tensor):
            self.copies.append([nbytes, faults, round(seconds, 7), out.data_ptr(), *glibc_chunk(out.data_ptr())])
        return out


def timed(fn, label, split=False):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        s = time.perf_counter()
        mode = CallSplit() if (split and SPLIT[0] and REC.on) else None
        try:
            if mode is None:
                return fn(*a, **k)
            with mode:
                return fn(*a, **k)
        finally:
            details = None
            if mode is not None:
                details = {key: [n, round(sec, 7), f, b, pf] for key, (n, sec, f, b, pf) in sorted(mode.totals.items())}
                if mode.copies:
                    details["blocking_copies"] = mode.copies
            REC.add(label, s, time.perf_counter(), details)
    return wrapper


def patch_fsdp2():
    """Wrap the FSDP2 functions and methods the step runs; returns what was wrapped and the source."""
    import torch.distributed.fsdp._fully_shard._fsdp_param_group as pg
    wrapped, source = [], []
    for name in ("foreach_all_gather", "foreach_all_gather_copy_out", "foreach_reduce"):
        fn = getattr(pg, name, None)
        if fn is not None:
            source.append(f"# ---- {pg.__name__}.{name}\n" + inspect.getsource(fn))
            setattr(pg, name, timed(fn, name, split=name == "foreach_reduce"))
            wrapped.append(f"_fsdp_param_group.{name}")
    cls = pg.FSDPParamGroup
    for name in ("pre_forward", "post_forward", "pre_backward", "post_backward", "finalize_backward",
                 "unshard", "wait_for_unshard", "reshard"):
        fn = getattr(cls, name, None)
        if fn is not None:
            if name in ("post_backward", "finalize_backward"):
                source.append(f"# ---- FSDPParamGroup.{name}\n" + inspect.getsource(fn))
            setattr(cls, name, timed(fn, name))
            wrapped.append(f"FSDPParamGroup.{name}")
    return wrapped, "\n\n".join(source)


def summarize(steps):
    """Per label: median over the timed steps of the summed host seconds, and of the call count."""
    out = {}
    labels = sorted({s[0] for st in steps for s in st["spans"]})
    for lab in labels:
        for mb in range(-1, MICRO_BATCHES):
            per = [sum(s[2] - s[1] for s in st["spans"] if s[0] == lab and s[4] == mb) for st in steps]
            n = [sum(1 for s in st["spans"] if s[0] == lab and s[4] == mb) for st in steps]
            if max(n) > 0:
                out[f"{lab} mb{mb}"] = {"median_s": statistics.median(per), "calls": statistics.median(n)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--split", action="store_true", help="time each torch call inside foreach_reduce")
    ap.add_argument("--profiler", action="store_true",
                    help="run each step under torch.profiler on rank 0, as run_step.py runs its traced step")
    ap.add_argument("--layers", type=int, default=CFG["layers"])
    ap.add_argument("--hidden", type=int, default=CFG["hidden"])
    ap.add_argument("--heads", type=int, default=CFG["heads"])
    ap.add_argument("--micro-batch", type=int, default=CFG["micro_batch"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    SPLIT[0] = args.split
    CFG.update(layers=args.layers, hidden=args.hidden, heads=args.heads, micro_batch=args.micro_batch)
    run_step.setup()
    wrapped, source = patch_fsdp2()
    model, details = run_step_stacks.build_dp(CFG, run_step.DEV, run_step.LOCAL_RANK)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    g = torch.Generator(device=run_step.DEV)
    g.manual_seed(100 + run_step.RANK)
    xs = [torch.randint(0, CFG["vocab"], (CFG["micro_batch"], CFG["seq"]), device=run_step.DEV, generator=g)
          for _ in range(MICRO_BATCHES)]
    ys = [torch.randint(0, CFG["vocab"], (CFG["micro_batch"], CFG["seq"]), device=run_step.DEV, generator=g)
          for _ in range(MICRO_BATCHES)]
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def span(label, fn):
        s = time.perf_counter()
        out = fn()
        REC.add(label, s, time.perf_counter())
        return out

    steps, cpu_before = [], None
    for i in range(args.warmup + args.steps):
        timed_step = i >= args.warmup
        if timed_step and cpu_before is None:
            cpu_before = run_step.cpu_times()
        dist.barrier(device_ids=[run_step.LOCAL_RANK])
        torch.cuda.synchronize()
        REC.spans = []
        REC.on = timed_step
        marks = {}
        start_event = torch.cuda.Event(enable_timing=True)
        REC.t0 = time.perf_counter()
        start_event.record()

        def mark(name):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            marks[name] = (e, time.perf_counter() - REC.t0)

        prof = contextlib.nullcontext()
        if args.profiler and run_step.RANK == 0:  # as run_step.py profiles its traced step: rank 0 records
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            prof = torch.profiler.profile(activities=acts, record_shapes=False, with_stack=False, profile_memory=False)
        with prof, sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for m in range(MICRO_BATCHES):
                REC.micro_batch = m
                loss = span("forward_and_loss_call", lambda: loss_fn(model(xs[m]), ys[m]) / MICRO_BATCHES)
                mark(f"forward_mb{m}")
                span("backward_call", loss.backward)
                mark(f"backward_mb{m}")
        REC.micro_batch = -1
        span("optimizer_step_call", opt.step)
        mark("optimizer")
        span("zero_grad_call", lambda: opt.zero_grad(set_to_none=True))
        span("synchronize", torch.cuda.synchronize)
        total = time.perf_counter() - REC.t0
        REC.on = False
        if timed_step:
            gpu = {k: [round(start_event.elapsed_time(e) / 1e3, 7), round(host, 7)] for k, (e, host) in marks.items()}
            steps.append({"step_s": total, "gpu_done_and_host_s": gpu, "spans": REC.spans})
    steal = run_step.steal_fraction(cpu_before, run_step.cpu_times())
    doc = {"schema_version": 1, "kind": "trainsim.offload_phase_probe", "rank": run_step.RANK,
           "world_size": dist.get_world_size(), "config": CFG, "micro_batches": MICRO_BATCHES,
           "split": args.split, "profiler": args.profiler,
           "malloc_env": {k: v for k, v in os.environ.items() if k.startswith(("MALLOC_", "GLIBC_TUNABLES", "LD_PRELOAD"))},
           "wrapped": wrapped, "stack_details": details,
           "cpu_steal_fraction": steal, "threads_per_rank": torch.get_num_threads(),
           "provenance": {"script": "calibrate/scripts/offload_phase_probe.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "gpu": torch.cuda.get_device_name(run_step.DEV), **run_step_doc.versions()},
           "step_s_median": statistics.median(s["step_s"] for s in steps),
           "summary": summarize(steps), "steps": steps}
    run_step.write_json(os.path.join(args.out, f"offload_phase_probe_rank{run_step.RANK}.json"), doc)
    if run_step.RANK == 0:
        with open(os.path.join(args.out, "fsdp2_source.txt"), "w") as f:
            f.write(source)
        top = sorted(doc["summary"].items(), key=lambda kv: -kv[1]["median_s"])[:12]
        print(f"[offload_phase_probe] step {doc['step_s_median'] * 1e3:.1f} ms, steal "
              f"{100 * (steal or 0):.1f}%; " + "; ".join(f"{k} {v['median_s'] * 1e3:.1f} ms" for k, v in top),
              flush=True)
    dist.barrier(device_ids=[run_step.LOCAL_RANK])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
