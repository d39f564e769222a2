#!/usr/bin/env python3
"""Compute beside communication inside training steps, read from torch.profiler traces.

For each trace (rank 0's, as reports/validation/scripts/run_step.py writes them): every compute kernel of
the first device that runs at least --overlap (0.9) of its time beside one kind of NCCL kernel
(AllReduce, AllGather, ReduceScatter) is compared with the same kernel (name, grid and block) in the same
trace running beside no NCCL kernel (the median of at least 3 such instances). Same GPU, same step, same
shape: what differs is the collective beside it. Per kernel class (GEMM, attention, optimizer, other;
classes as trainsim validate's "GPU kernel time by class") and NCCL kind, the slowdown is the time the
overlapped instances took over the time their unoverlapped twins take (time-weighted).

Also, per trace, the compute stream's gaps between queued kernels (under 5 us: the GPU front end's time
from one kernel's end to the next one's start when the next is already queued).

  python3 calibrate/scripts/step_interference.py TRACE.json.gz ... [--json OUT.json]

A calibration probe's analysis (results: reports/calibration/step-interference/); nothing in trainsim
reads its output.
"""
import argparse
import bisect
import collections
import gzip
import json
import os
import re
import statistics

NCCL_KINDS = ("AllReduce", "AllGather", "ReduceScatter", "SendRecv", "Broadcast")


def kernel_class(name):
    low = name.lower()
    if "nccl" in low:
        return "nccl"
    if "flash" in low:
        return "attention"
    if re.search(r"nvjet|gemm|cutlass|xmma", name, re.I):
        return "gemm"
    if "adam" in low:
        return "optimizer"
    return "other"


def nccl_kind(name):
    for k in NCCL_KINDS:
        if k in name:
            return k
    return "other"


def load_kernels(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    ks = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    if not ks:
        return []
    dev = min(e.get("args", {}).get("device", 0) for e in ks)
    return sorted((e for e in ks if e.get("args", {}).get("device", 0) == dev), key=lambda e: e["ts"])


def analyze(path, overlap=0.9):
    ks = load_kernels(path)
    nccl = sorted((e["ts"], e["ts"] + e["dur"], nccl_kind(e["name"])) for e in ks if kernel_class(e["name"]) == "nccl")
    starts = [a for a, _, _ in nccl]
    longest = max((e["dur"] for e in ks if kernel_class(e["name"]) == "nccl"), default=0)
    groups = collections.defaultdict(lambda: {"free": [], "beside": collections.defaultdict(list)})
    for e in ks:
        c = kernel_class(e["name"])
        if c == "nccl":
            continue
        a, b = e["ts"], e["ts"] + e["dur"]
        # NCCL kernels that started before this one ended and may still run: a window back by the longest.
        lo = bisect.bisect_left(starts, a - longest)
        hi = bisect.bisect_right(starts, b)
        by_kind = collections.Counter()
        for s, t, kind in nccl[lo:hi]:
            if s < b and t > a:
                by_kind[kind] += min(b, t) - max(a, s)
        key = (c, e["name"], str(e.get("args", {}).get("grid")), str(e.get("args", {}).get("block")))
        if not by_kind:
            groups[key]["free"].append(e["dur"])
        elif len(by_kind) == 1:
            kind, t = next(iter(by_kind.items()))
            if t >= overlap * max(e["dur"], 1e-9):
                groups[key]["beside"][kind].append(e["dur"])
    cells = collections.defaultdict(lambda: {"beside_us": 0.0, "alone_us": 0.0, "kernels": 0, "unmatched_us": 0.0})
    for (c, _, _, _), g in groups.items():
        base = statistics.median(g["free"]) if len(g["free"]) >= 3 else None
        for kind, durs in g["beside"].items():
            cell = cells[(c, kind)]
            if base is None:
                cell["unmatched_us"] += sum(durs)
                continue
            cell["beside_us"] += sum(durs)
            cell["alone_us"] += base * len(durs)
            cell["kernels"] += len(durs)
    # The compute stream (the stream with the most kernel time that is not NCCL's): gaps between queued kernels.
    by_stream = collections.defaultdict(list)
    for e in ks:
        by_stream[e.get("args", {}).get("stream")].append(e)
    main = max(by_stream, key=lambda s: sum(e["dur"] for e in by_stream[s] if kernel_class(e["name"]) != "nccl"))
    seq = by_stream[main]
    gaps = [seq[i + 1]["ts"] - (seq[i]["ts"] + seq[i]["dur"]) for i in range(len(seq) - 1)]
    queued = [g for g in gaps if 0 <= g < 5]
    return {
        "trace": os.path.basename(path),
        "cells": [dict(kernel_class=c, nccl=kind, slowdown=(v["beside_us"] / v["alone_us"]) if v["alone_us"] else None,
                       **{k: round(x, 3) if isinstance(x, float) else x for k, x in v.items()})
                  for (c, kind), v in sorted(cells.items())],
        "compute_stream": {"kernels": len(seq), "busy_ms": round(sum(e["dur"] for e in seq) / 1e3, 3),
                           "queued_gaps": len(queued), "queued_gap_ms": round(sum(queued) / 1e3, 3),
                           "queued_gap_median_us": round(statistics.median(queued), 3) if queued else None},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+")
    p.add_argument("--overlap", type=float, default=0.9, help="share of a kernel's time beside one NCCL kind")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    out = [analyze(t, a.overlap) for t in a.traces]
    print("| trace | class | beside | kernels | time beside (ms) | slowdown | beside, no twin (ms) |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        for c in r["cells"]:
            s = "-" if c["slowdown"] is None else f"{c['slowdown']:.3f}"
            print(f"| {r['trace']} | {c['kernel_class']} | {c['nccl']} | {c['kernels']} | {c['beside_us'] / 1e3:.1f} | {s} | "
                  f"{c['unmatched_us'] / 1e3:.1f} |")
    print()
    print("| trace | compute-stream kernels | busy (ms) | queued gaps | their sum (ms) | median (us) |")
    print("|---|---|---|---|---|---|")
    for r in out:
        g = r["compute_stream"]
        print(f"| {r['trace']} | {g['kernels']} | {g['busy_ms']:.1f} | {g['queued_gaps']} | {g['queued_gap_ms']:.1f} | "
              f"{g['queued_gap_median_us']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"schema_version": 1, "kind": "trainsim.step_interference", "overlap": a.overlap, "traces": out},
                      f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
