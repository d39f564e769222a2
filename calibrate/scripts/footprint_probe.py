#!/usr/bin/env python3
"""Do memory-bound kernels slow down when the GPU's memory is nearly full? 
(its results left the tree: reports/HISTORY.md)

context_probe.py found the casts and adds of a Llama 8B layer's weights at
their calibrated rates whether run alone or in a layer-like sequence, 25-30% above what the same
kernels reached in the single-GPU Llama 8B row's profiled step, whose process held about 100 GB.
Here the same three ops run, each 20 times back to back on Llama 3 8B's four layer weights (kernel
durations from torch.profiler's trace), first with only their own tensors allocated (about 3 GB),
then again with BALLAST_GB more allocated and written first, the op tensors re-allocated after it.

  python3 calibrate/scripts/footprint_probe.py --out DIR    (writes DIR/footprint_probe.json)
"""
import argparse
import json
import os
import statistics
import time

import torch

# Llama 3 8B's layer weights, and a function's kernels under torch.profiler in start order.
from context_probe import WEIGHTS, run

BF16, FP32 = torch.bfloat16, torch.float32
ROUNDS = 20
BALLAST_GB = 100


def kernel_durations(fn, scratch):
    return [d for _, d in run(fn, scratch)]


def measure(dev, scratch, label):
    w32 = {k: torch.randn(o, i, device=dev, dtype=FP32) for k, (o, i) in WEIGHTS.items()}
    w16 = {k: torch.empty(o, i, device=dev, dtype=BF16) for k, (o, i) in WEIGHTS.items()}
    g16 = {k: torch.randn(o, i, device=dev, dtype=BF16) for k, (o, i) in WEIGHTS.items()}
    g32 = {k: torch.zeros(o, i, device=dev, dtype=FP32) for k, (o, i) in WEIGHTS.items()}
    ops = {
        "cast_fp32_to_bf16": (lambda k: w16[k].copy_(w32[k]), 6),
        "cast_bf16_to_fp32": (lambda k: g16[k].to(FP32), 6),
        "add_fp32": (lambda k: g32[k].add_(w32[k]), 12),
    }
    rows = []
    for op, (f, bytes_per) in ops.items():
        for k in WEIGHTS:
            for _ in range(3):
                f(k)
            durs = kernel_durations(lambda: [f(k) for _ in range(ROUNDS)], scratch)
            n = w32[k].numel()
            rows.append({"condition": label, "op": op, "weight": k, "bytes": bytes_per * n, "kernels": len(durs),
                         "median_s": statistics.median(durs), "rate_GBps": bytes_per * n / statistics.median(durs) / 1e9})
            print(json.dumps(rows[-1]), flush=True)
    del w32, w16, g16, g32
    torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda", 0)
    scratch = os.path.join(args.out, "scratch_trace.json")
    rows = measure(dev, scratch, "alone")
    # The ballast in 1 GiB tensors, each written, so its pages are mapped before the ops' tensors.
    ballast = []
    for _ in range(BALLAST_GB):
        t = torch.empty(1 << 29, device=dev, dtype=BF16)
        t.fill_(1)
        ballast.append(t)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated(dev)
    rows += measure(dev, scratch, f"after {BALLAST_GB} GiB")
    os.remove(scratch)
    doc = {"schema_version": 1, "kind": "trainsim.footprint_probe",
           "provenance": {"script": "calibrate/scripts/footprint_probe.py", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "rounds": ROUNDS,
                          "ballast_bytes": held},
           "rows": rows}
    with open(os.path.join(args.out, "footprint_probe.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
