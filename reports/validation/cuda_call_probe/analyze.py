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
its host); and, per layer, the host's time from one layer's flash-attention launch to the next
layer's (forward: flash_fwd_kernel on the main thread; backward: flash_bwd_dot_do_o_kernel on
autograd's thread; intervals over 5 ms, between micro-batches, left out): the CUDA calls in it, the
time inside them and the gaps between them, and the memsets among them (cuBLAS's cooperative GEMM
kernels at the rows' shapes are each preceded by one).

    python3 reports/validation/cuda_call_probe/analyze.py [RUN_DIR ...]
(default: every run folder under reports/validation/cuda_call_probe/trace*_1/ (calls 34, 35 and 37); a
folder with every rank's trace (call 35, --trace-all-ranks: NAME.rankR.trace.json.gz beside rank 0's
NAME.trace.json.gz) gives a row per rank, and the per-rank comparison of call 35's rule)
"""
import collections
import glob
import gzip
import json
import os
import re
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


def main_thread_long_calls(trace, steps):
    """Per step, the time the main thread (the one calling cudaDeviceSynchronize: run_step.py's
    timed step synchronizes there) spends inside CUDA calls over 0.5 ms, by call."""
    api = collections.defaultdict(list)
    for e in load(trace):
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            api[e["tid"]].append(e)
    main = [t for t, calls in api.items() if any(e["name"] == "cudaDeviceSynchronize" for e in calls)]
    long_calls = collections.Counter()
    for e in api[main[0]] if main else []:
        if e["dur"] > 500:
            long_calls[e["name"]] += e["dur"] / steps / 1e3
    return long_calls


def per_layer(trace, kernel):
    """Median over layers of (host time a layer, CUDA calls, time in them, gaps, memsets)."""
    ev = [e for e in load(trace) if e.get("ph") == "X"]
    kern = {e["args"].get("correlation"): e["name"] for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")}
    api = sorted((e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")), key=lambda e: e["ts"])
    marks = [i for i, e in enumerate(api) if kernel in kern.get(e.get("args", {}).get("correlation"), "")]
    tid = api[marks[0]]["tid"]
    layers = []
    for a, b in zip(marks, marks[1:]):
        span = api[b]["ts"] - api[a]["ts"]
        if span > 5000:
            continue
        seg = [e for e in api[a:b] if e["tid"] == tid]
        gaps = sum(y["ts"] - (x["ts"] + x["dur"]) for x, y in zip(seg, seg[1:]))
        memsets = sum(1 for e in seg if e["name"] == "cudaMemsetAsync")
        layers.append((span, len(seg), sum(e["dur"] for e in seg), gaps, memsets))
    return [statistics.median(x[i] for x in layers) for i in range(5)], len(layers)


def first_rule(layer_bwd, world, row):
    """Call 35's first rule on one 4-GPU run: a layer's backward on rank 0 against ranks 1-3's."""
    call35 = {g: [layer_bwd.get(f"{world}/{g}_1f1b r{k}") for k in range(4)] for g in ("real", "tiny")}
    if not all(v is not None for vs in call35.values() for v in vs):
        return
    ratio = {g: vs[0] / statistics.median(vs[1:]) for g, vs in call35.items()}
    real_tiny = [call35["real"][k] / call35["tiny"][k] for k in range(4)]
    if ratio["real"] >= 1.2 and ratio["tiny"] <= 1.1:
        verdict = "rank 0 alone"
    elif min(real_tiny) >= 1.2 and ratio["real"] <= 1.1:
        verdict = "every rank"
    else:
        verdict = "undecided"
    print()
    print(f"Rule (reports/validation/README.md, row {row}'s first, call 35's), {world}: a layer's backward on rank 0 against ranks 1-3's median: "
          f"real GPT {ratio['real']:.2f}, tiny GPT {ratio['tiny']:.2f}; real / tiny by rank "
          + ", ".join(f"{x:.2f}" for x in real_tiny) + f": {verdict}")


def main():
    dirs = sys.argv[1:] or sorted(d for d in glob.glob(os.path.join(HERE, "trace*_1", "*")) if os.path.isdir(d))
    runs = []  # (label, trace)
    for d in dirs:
        for trace in sorted(glob.glob(os.path.join(d, "*.trace.json.gz"))):
            m = re.search(r"\.rank(\d+)\.trace\.json\.gz$", trace)
            rank = m.group(1) if m else "0"
            label = os.path.join(os.path.basename(os.path.dirname(d)), os.path.basename(d))
            runs.append((f"{label} r{rank}", trace))
    print("| run | thread | CUDA calls | launches | in CUDA calls (ms) | of it in calls over 0.5 ms (ms) | between calls: <0.1 / 0.1-1 / 1-10 / >10 ms gaps (ms) | host busy (ms) | per launch (us) |")
    print("|---|---|---|---|---|---|---|---|---|")
    per_run = {}
    summary = []
    steps = int(os.environ.get("TRACE_STEPS", "3"))
    for label, trace in runs:
        rows, lags, kernels_us = analyze(trace, steps)
        for tid, ncalls, launches, inside, long_ms, long_by, gaps in sorted(rows, key=lambda r: -r[1]):
            if ncalls < 1:
                continue
            by = ", ".join(f"{k} {v:.1f}" for k, v in sorted(long_by.items(), key=lambda kv: -kv[1])[:3])
            busy = inside - long_ms + gaps[0] + gaps[1]
            per = f"{1e3 * busy / launches:.1f}" if launches else "-"
            print(f"| {label} | {tid} | {ncalls:.0f} | {launches:.0f} | {inside:.1f} | {long_ms:.1f}{' (' + by + ')' if by else ''} | "
                  + " / ".join(f"{g:.1f}" for g in gaps) + f" | {busy:.1f} | {per} |")
            acc = per_run.setdefault(label, [0.0, 0.0, 0.0])
            acc[0] += busy
            acc[1] += long_ms
            acc[2] += launches
        if lags:
            summary.append((label, statistics.median(lags) / 1e3, sum(1 for x in lags if x < 50) / len(lags),
                            len(lags) / steps, kernels_us / 1e3))
    print()
    print("Rank 0, its threads together, a step: host busy (in CUDA calls under 0.5 ms and gaps under 1 ms), "
          "time in CUDA calls over 0.5 ms, launches:")
    for label, (busy, long_ms, launches) in per_run.items():
        print(f"  {label}: {busy:.1f} ms, {long_ms:.1f} ms, {launches:.0f}")
    real, tiny = "trace4_1/real_1f1b r0", "trace4_1/tiny_1f1b r0"
    if real in per_run and tiny in per_run:
        r, t = per_run[real], per_run[tiny]
        d_busy, d_long = r[0] - t[0], r[1] - t[1]
        if d_long >= 15:
            verdict = "waits in CUDA calls"
        elif d_busy >= 15 and abs(d_long) < 5:
            verdict = "host work between calls"
        else:
            verdict = "undecided"
        print(f"Rule (reports/validation/README.md, row 34), 1F1B real minus tiny: host busy {d_busy:+.1f} ms, "
              f"calls over 0.5 ms {d_long:+.1f} ms: {verdict}")
    print()
    print("| run | pass | host time a layer (us, median) | CUDA calls | in them (us) | gaps between them (us) | memsets | layers |")
    print("|---|---|---|---|---|---|---|---|")
    layer_bwd = {}
    for run, trace in runs:
        for label, kernel in (("forward", "flash_fwd_kernel"), ("backward", "flash_bwd_dot_do_o")):
            (span, calls, inside, gaps, memsets), n = per_layer(trace, kernel)
            print(f"| {run} | {label} | {span:.0f} | {calls:.0f} | {inside:.0f} | {gaps:.0f} | {memsets:.0f} | {n} |")
            if label == "backward":
                layer_bwd[run] = span
    for world, row in (("traceall4_1", 35), ("traceall4_h200_1", 37)):
        first_rule(layer_bwd, world, row)
    main_long = {}
    for run, trace in runs:
        if run.startswith("traceall"):
            main_long[run] = main_thread_long_calls(trace, int(os.environ.get("TRACE_STEPS", "3")))
    if main_long:
        print()
        print("| run | the main thread in CUDA calls over 0.5 ms, a step (ms) | by call |")
        print("|---|---|---|")
        for run, calls in main_long.items():
            by = ", ".join(f"{k} {v:.1f}" for k, v in calls.most_common(4))
            print(f"| {run} | {sum(calls.values()):.1f} | {by} |")
        for world in ("traceall4_1", "traceall2_1", "traceall4_h200_1"):
            others = [sum(c.values()) for r, c in main_long.items() if r.startswith(f"{world}/real_1f1b") and not r.endswith(" r0")]
            if others:
                m = statistics.median(others)
                verdict = "in CUDA synchronization" if m >= 30 else "not in CUDA calls" if m < 5 else "undecided"
                print(f"Second rule (row 35), {world}: ranks after 0 on the real GPT, median {m:.1f} ms a step: {verdict}")
    print()
    print("| run | kernels a step | GPU busy a step (ms, summed) | GPU lag behind the launch, median (ms) | kernels starting within 50 us of their launch |")
    print("|---|---|---|---|---|")
    for label, med, starved, n, busy in summary:
        print(f"| {label} | {n:.0f} | {busy:.1f} | {med:.2f} | {100 * starved:.0f}% |")


if __name__ == "__main__":
    main()
