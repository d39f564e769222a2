#!/usr/bin/env python3
"""Do kernels run at their calibrated rates inside a layer's sequence? 
(its results left the tree: reports/HISTORY.md)

`trainsim validate`'s kernel classes (reports/validation/report.md, "GPU kernel time by class") show
the replay costing GEMMs about 6% long and memory-bound kernels about 10% short against the
profiled steps, with every rate calibrated back to back on one op. In the single-GPU Llama 8B row's
trace (reports/validation/measured/llama-h200x2/) autograd's bf16 -> fp32 weight-gradient casts ran
at 1.61 TB/s, the forward's fp32 -> bf16 weight casts at 3.46 and AccumulateGrad's adds at 3.3,
where the calibration has 2.03, 4.09 and 4.26 TB/s at its largest size (402-805 MB; the layer's
gate_up weight is 469 MB in fp32).

This probe times, with torch.profiler's kernel durations (what the traces hold, nothing inserted
between kernels), over Llama 3 8B's four layer weights (qkv, proj, gate_up, down) at 2048 tokens:
  isolated: each op 20 times back to back on one tensor (the calibration's way, at the step's sizes);
  sequence: a layer-like order, 20 rounds: per weight, the fp32 -> bf16 cast and the forward GEMM;
            then per weight in reverse, the weight-gradient GEMM, the bf16 -> fp32 cast and the
            fp32 add into .grad (as autocast and AccumulateGrad do).
and writes, per op and weight, the median kernel time and rate of each, and their ratio.

  python3 calibrate/scripts/context_probe.py --out DIR    (writes DIR/context_probe.json)
"""
import argparse
import json
import os
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

BF16, FP32 = torch.bfloat16, torch.float32
T = 2048
WEIGHTS = {"qkv": (6144, 4096), "proj": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
ROUNDS = 20


def kernel_times(prof, scratch):
    """Every kernel's (name, duration in seconds), in start order, from the profiler's Chrome trace
    (the traces' own events; cuBLAS's memsets are gpu_memset events, not kernels)."""
    prof.export_chrome_trace(scratch)
    with open(scratch) as f:
        events = json.load(f)["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    return [(e["name"], e["dur"] * 1e-6) for e in kernels]


def run(fn, scratch):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return kernel_times(prof, scratch)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    w32 = {k: torch.randn(o, i, device=dev, dtype=FP32) * 0.02 for k, (o, i) in WEIGHTS.items()}
    w16 = {k: v.to(BF16) for k, v in w32.items()}
    g32 = {k: torch.zeros_like(v) for k, v in w32.items()}
    x = {k: torch.randn(T, i, device=dev, dtype=BF16) for k, (o, i) in WEIGHTS.items()}
    dy = {k: torch.randn(T, o, device=dev, dtype=BF16) for k, (o, i) in WEIGHTS.items()}
    gw16 = {k: torch.empty_like(w16[k]) for k in WEIGHTS}

    ops = {
        "cast_fp32_to_bf16": (lambda k: w16[k].copy_(w32[k]), lambda k: 6 * w32[k].numel(), "bytes"),
        "gemm_forward": (lambda k: torch.mm(x[k], w16[k].t()), lambda k: 2 * T * w32[k].numel(), "flops"),
        "gemm_weight_grad": (lambda k: torch.mm(dy[k].t(), x[k], out=gw16[k]), lambda k: 2 * T * w32[k].numel(), "flops"),
        "cast_bf16_to_fp32": (lambda k: gw16[k].to(FP32), lambda k: 6 * w32[k].numel(), "bytes"),
        "add_fp32": (lambda k: g32[k].add_(w32[k]), lambda k: 12 * w32[k].numel(), "bytes"),
    }
    for _ in range(3):  # warm-up: cuBLAS handles and workspaces, the allocator
        for k in WEIGHTS:
            for f, _, _ in ops.values():
                f(k)
    torch.cuda.synchronize()

    def isolated(op, k):
        def body():
            for _ in range(ROUNDS):
                ops[op][0](k)
        return body

    def sequence():
        for _ in range(ROUNDS):
            for k in WEIGHTS:
                ops["cast_fp32_to_bf16"][0](k)
                ops["gemm_forward"][0](k)
            for k in reversed(list(WEIGHTS)):
                ops["gemm_weight_grad"][0](k)
                ops["cast_bf16_to_fp32"][0](k)
                ops["add_fp32"][0](k)

    scratch = os.path.join(args.out, "scratch_trace.json")
    seq = run(sequence, scratch)
    order = []
    for k in WEIGHTS:
        order += [("cast_fp32_to_bf16", k), ("gemm_forward", k)]
    for k in reversed(list(WEIGHTS)):
        order += [("gemm_weight_grad", k), ("cast_bf16_to_fp32", k), ("add_fp32", k)]
    per_round = len(seq) // ROUNDS
    rows = []
    doc = {"schema_version": 1, "kind": "trainsim.context_probe",
           "provenance": {"script": "calibrate/scripts/context_probe.py", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "rounds": ROUNDS,
                          "kernels_per_round": per_round, "ops_per_round": len(order)},
           "rows": rows}
    if per_round != len(order) or len(seq) % ROUNDS:
        doc["error"] = f"{len(seq)} kernels for {ROUNDS} rounds of {len(order)} ops: one kernel per op expected"
    for op, k in ops_and_weights(order):
        amount = ops[op][1](k)
        iso = [d for _, d in run(isolated(op, k), scratch)]
        if doc.get("error"):
            in_seq = []
        else:
            pos = order.index((op, k))
            in_seq = [seq[r * per_round + pos][1] for r in range(ROUNDS)]
        row = {"op": op, "weight": k, "unit": ops[op][2], "amount": amount,
               "isolated_s": statistics.median(iso) if len(iso) == ROUNDS else None,
               "isolated_kernels": len(iso),
               "sequence_s": statistics.median(in_seq) if in_seq else None,
               "sequence_kernel": seq[order.index((op, k))][0] if seq else None}
        if row["isolated_s"] and row["sequence_s"]:
            row["isolated_rate"] = amount / row["isolated_s"]
            row["sequence_rate"] = amount / row["sequence_s"]
            row["sequence_over_isolated"] = row["sequence_rate"] / row["isolated_rate"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    os.remove(scratch)
    with open(os.path.join(args.out, "context_probe.json"), "w") as f:
        json.dump(doc, f, indent=1)


def ops_and_weights(order):
    seen = []
    for item in order:
        if item not in seen:
            seen.append(item)
    return seen


if __name__ == "__main__":
    main()
