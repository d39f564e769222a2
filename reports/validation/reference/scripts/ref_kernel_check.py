#!/usr/bin/env python3
"""The reference's own kernels, calibrated (trainsim-calibrate --only reference_kernels) against
the same kernels inside the step (the op profile, TRAINSIM_REF_OP_PROFILE=1, of the single-GPU
L24-h1024 row), both from one GPU: for each profiled op, its launches' bytes as
workloads/stacks/reference_kernels.hpp counts them over the profile's calibration.reference_kernels
curve (log-interpolated by size, clamped at the ends, as sim/costs/cost_model.cpp does), beside the
op's measured time. A reading aid: if the byte formulas change, so must this.

usage: ref_kernel_check.py PROFILE.json OP_PROFILE.txt
"""
import json
import math
import sys

B, S, H, A = 4, 2048, 1024, 16  # the row: micro-batch 4, sequence 2048, hidden 1024, 16 heads
T = B * S
LAUNCHES = 48  # 24 layers x 2 micro-batches

BYTES = {  # per element of (rows x cols), workloads/stacks/reference_kernels.hpp
    "layernorm_fwd": 6, "layernorm_bwd_input": 16, "layernorm_bwd_params": 8, "split_qkv": 18,
    "merge_qkv_grad": 18, "merge_heads": 6, "split_heads": 6, "causal_softmax_fwd": 4,
    "causal_softmax_bwd": 5, "column_sum_fp32": 4, "column_sum_bf16": 2,
}

# op profile name -> launches of (class, rows, cols, count)
OPS = {
    "softmax_fwd": [("causal_softmax_fwd", B * A * S, S, LAUNCHES)],
    "softmax_bwd": [("causal_softmax_bwd", B * A * S, S, LAUNCHES)],
    "split_qkv": [("split_qkv", T, H, LAUNCHES)],
    "merge_heads": [("merge_heads", T, H, LAUNCHES)],
    "split_heads": [("split_heads", T, H, LAUNCHES)],
    "merge_qkv_grad": [("merge_qkv_grad", T, H, LAUNCHES)],
    "column_sum": [("column_sum_fp32", T, H, 2 * LAUNCHES), ("column_sum_bf16", T, 4 * H, LAUNCHES),
                   ("column_sum_bf16", T, 3 * H, LAUNCHES)],
    "ln1_fwd": [("layernorm_fwd", T, H, LAUNCHES)],
    "ln2_fwd": [("layernorm_fwd", T, H, LAUNCHES)],
    "ln_bwd_input": [("layernorm_bwd_input", T, H, 2 * LAUNCHES)],
    "ln_bwd_params": [("layernorm_bwd_params", T, H, 2 * LAUNCHES)],
}


def interp(points, b):
    pts = [(p["bytes"], p["GBps"]) for p in points]
    if b <= pts[0][0]:
        return pts[0][1]
    if b >= pts[-1][0]:
        return pts[-1][1]
    for (b0, v0), (b1, v1) in zip(pts, pts[1:]):
        if b <= b1:
            w = (math.log(b) - math.log(b0)) / (math.log(b1) - math.log(b0))
            return v0 + w * (v1 - v0)


def main():
    curves = {c["what"]: c["points"] for c in json.load(open(sys.argv[1]))["calibration"]["reference_kernels"]["curves"]}
    measured = {}
    for line in open(sys.argv[2]):
        f = line.split()
        if len(f) == 4 and f[0] in OPS:
            measured[f[0]] = float(f[1])
    print(f"{'op':<16}{'measured ms':>13}{'from table ms':>15}{'difference':>12}")
    tm = tt = 0.0
    for op, launches in OPS.items():
        ms = 0.0
        for cls, rows, cols, n in launches:
            b = BYTES[cls] * rows * cols
            ms += n * b / (interp(curves[cls], b) * 1e9) * 1e3
        tm += measured[op]
        tt += ms
        print(f"{op:<16}{measured[op]:>13.2f}{ms:>15.2f}{100 * (ms / measured[op] - 1):>+11.1f}%")
    print(f"{'total':<16}{tm:>13.2f}{tt:>15.2f}{100 * (tt / tm - 1):>+11.1f}%")


if __name__ == "__main__":
    main()
