#!/usr/bin/env python3
"""Validation call 34: where rank 0's host time goes in the 4-stage pipelines, real against tiny GPT.

Reads rank 0's CUDA-only profiler traces (run_step.py --trace-cuda-only --trace-steps K: kernels,
memsets and copies on the GPU, and every host thread's CUDA runtime and driver calls, with no
PyTorch operator recorded, so the host runs near its unprofiled pace) and prints, per run and per
host thread that calls CUDA, a step's worth (totals / K) of:
  - launches: kernel launches, memsets and copies issued;
  - in CUDA calls: the time inside runtime and driver calls, and the part in calls over 0.5 ms
    (a call that waits: a full launch queue, a synchronization);
  - between calls: the gaps between one CUDA call's end and the thread's next call's start, split by
    length (under 0.1 ms, 0.1-1 ms, 1-10 ms, over 10 ms): the host's own work between launches is in
    the short ones, a thread idle or waiting outside CUDA in the long ones;
and, per run, the GPU's lag behind its host: for each kernel, its start minus the end of the call
that launched it (median, and the share of kernels that start within 50 us: the GPU waiting for
its host).

    python3 reports/validation/cuda_call_probe/analyze.py [RUN_DIR ...]
(default: every run folder under reports/validation/cuda_call_probe/trace4_1/)
"""
import collections
import glob
import gzip
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH = ("cudaLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel", "cudaLaunchKernelExC", "cudaMemsetAsync",
          "cudaMemcpyAsync")
BINS = ((0, 100), (100, 1000), (1000, 10000), (10000, float("inf")))


def load(trace):
    with gzip.open(trace) as f:
        return json.load(f)["traceEvents"]


def analyze(trace, steps):
    ev = [e for e in load(trace) if e.get("ph") == "X"]
    api = collections.defaultdict(list)
    gpu = []
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            api[e["tid"]].append(e)
        elif e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy"):
            gpu.append(e)
    launch_end = {}
    rows = []
    for tid, calls in api.items():
        calls.sort(key=lambda e: e["ts"])
        launches = sum(1 for e in calls if e["name"] in LAUNCH)
        inside = sum(e["dur"] for e in calls)
        long_calls = collections.Counter()
        for e in calls:
            if e["dur"] > 500:
                long_calls[e["name"]] += e["dur"]
            corr = e.get("args", {}).get("correlation")
            if corr is not None:
                launch_end[corr] = e["ts"] + e["dur"]
        gaps = [0.0] * len(BINS)
        for a, b in zip(calls, calls[1:]):
            g = b["ts"] - (a["ts"] + a["dur"])
            for i, (lo, hi) in enumerate(BINS):
                if lo <= g < hi:
                    gaps[i] += g
        rows.append((tid, len(calls) / steps, launches / steps, inside / steps / 1e3,
                     sum(long_calls.values()) / steps / 1e3, {k: v / steps / 1e3 for k, v in long_calls.items()},
                     [g / steps / 1e3 for g in gaps]))
    lags = []
    for k in gpu:
        corr = k.get("args", {}).get("correlation")
        if corr in launch_end:
            lags.append(k["ts"] - launch_end[corr])
    kernels_us = sum(k["dur"] for k in gpu) / steps
    return rows, lags, kernels_us


def main():
    dirs = sys.argv[1:] or sorted(d for d in glob.glob(os.path.join(HERE, "trace4_1", "*")) if os.path.isdir(d))
    print("| run | thread | CUDA calls | launches | in CUDA calls (ms) | of it in calls over 0.5 ms (ms) | between calls: <0.1 / 0.1-1 / 1-10 / >10 ms gaps (ms) |")
    print("|---|---|---|---|---|---|---|")
    summary = []
    for d in dirs:
        traces = glob.glob(os.path.join(d, "*.trace.json.gz"))
        if not traces:
            continue
        steps = int(os.environ.get("TRACE_STEPS", "3"))
        rows, lags, kernels_us = analyze(traces[0], steps)
        label = os.path.basename(d)
        for tid, ncalls, launches, inside, long_ms, long_by, gaps in sorted(rows, key=lambda r: -r[1]):
            if ncalls < 1:
                continue
            by = ", ".join(f"{k} {v:.1f}" for k, v in sorted(long_by.items(), key=lambda kv: -kv[1])[:3])
            print(f"| {label} | {tid} | {ncalls:.0f} | {launches:.0f} | {inside:.1f} | {long_ms:.1f}{' (' + by + ')' if by else ''} | "
                  + " / ".join(f"{g:.1f}" for g in gaps) + " |")
        if lags:
            summary.append((label, statistics.median(lags) / 1e3, sum(1 for x in lags if x < 50) / len(lags),
                            len(lags) / steps, kernels_us / 1e3))
    print()
    print("| run | kernels a step | GPU busy a step (ms, summed) | GPU lag behind the launch, median (ms) | kernels starting within 50 us of their launch |")
    print("|---|---|---|---|---|")
    for label, med, starved, n, busy in summary:
        print(f"| {label} | {n:.0f} | {busy:.1f} | {med:.2f} | {100 * starved:.0f}% |")


if __name__ == "__main__":
    main()
