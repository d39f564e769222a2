#!/usr/bin/env python3
"""The single-GPU L24-h1024 row's per-operation GPU time (the reference's op profile,
TRAINSIM_REF_OP_PROFILE=1) beside what the simulator charges the same operation, one layer and
micro-batch at a time x 48. The simulator's side is recomputed here as sim/costs/cost_model.cpp does
it (GEMMs: FLOPs over the peak times the calibrated efficiency of the nearest (m, n, k) in log
space, floored by their operands and result crossing HBM at 80% of hbm_GBps; memory-bound
kernels: the stated bytes of workloads/stacks/reference_stack.cpp over the calibrated curve of the
kernel's class, log-interpolated by size) from the committed profile, so that each row names
what it rests on. A reading aid, not part of the simulator: if cost_model.cpp changes, so must this.

usage: op_costs.py PROFILE.json OP_PROFILE.txt
"""
import json
import math
import sys

from ref_kernel_check import interp  # the curve lookup sim/costs/cost_model.cpp makes, in one copy

B, S, H, A = 4, 2048, 1024, 16  # the row: micro-batch 4, sequence 2048, hidden 1024, 16 heads
CALLS = 48  # 24 layers x 2 micro-batches


def main():
    prof = json.load(open(sys.argv[1]))
    cal = prof["calibration"]
    peak = prof["gpu"]["peak_TFLOPs"]["bf16"] * 1e12
    hbm = prof["gpu"]["hbm_GBps"] * 1e9 * 0.8

    def curve(what):
        return next(c for c in cal["kernels"] if c["what"] == what)["points"]

    cls = {"norm": "layernorm", "activation": "gelu", "softmax": "softmax"}

    def kern(name, nbytes):
        return nbytes / (interp(curve(cls.get(name, "copy")), nbytes) * 1e9)

    def gemm(m, n, k, batch=1):
        best = min((e for e in cal["gemm"] if e["precision"] == "bf16"),
                   key=lambda e: (math.log(e["m"] / m) ** 2 + math.log(e["n"] / n) ** 2 + math.log(e["k"] / k) ** 2))
        compute = 2 * m * n * k * batch / (peak * best["efficiency"])
        traffic = (m * k + k * n + m * n) * batch * 2 / hbm
        return max(compute, traffic)

    T, d, f = B * S, H // A, 4 * H
    sq, Th, Tf = B * A * S * S, T * H, T * f
    fp32_scores = kern("fp32_scores", 2 * sq)
    # op profile name -> (simulated seconds per layer and micro-batch, what it is)
    pred = {
        "ln1_fwd": kern("norm", 2 * (4 + 2) * Th) / 2,
        "ln2_fwd": kern("norm", 2 * (4 + 2) * Th) / 2,
        "gemm_qkv_fwd": gemm(T, 3 * H, H),
        "split_qkv": kern("split_qkv", 18 * Th),
        "gemm_scores_fwd": gemm(S, S, d, B * A) + fp32_scores,
        "softmax_fwd": kern("softmax", 4 * sq),
        "gemm_pv_fwd": gemm(S, d, S, B * A),
        "merge_heads": kern("merge_heads", 6 * Th),
        "gemm_proj_fwd": gemm(T, H, H),
        "bias_residual": kern("bias_residual", 24 * Th),
        "gemm_fc1_fwd": gemm(T, f, H),
        "bias_gelu_fwd": kern("activation", 8 * Tf),
        "gemm_fc2_fwd": gemm(T, H, f),
        "column_sum": kern("column_sum", 2 * 4 * Th + 2 * Tf + 6 * Th),
        "to_bf16": kern("to_bf16", 12 * Th),
        "gemm_fc2_dgrad": gemm(T, f, H),
        "gemm_fc2_wgrad": gemm(f, H, T),
        "gelu_bwd": kern("activation", 8 * Tf),
        "gemm_fc1_dgrad": gemm(T, H, f),
        "gemm_fc1_wgrad": gemm(H, f, T),
        "gemm_proj_dgrad": gemm(T, H, H),
        "gemm_proj_wgrad": gemm(H, H, T),
        "split_heads": kern("split_heads", 6 * Th),
        "gemm_dp_bwd": gemm(S, S, d, B * A) + fp32_scores,
        "gemm_dv_bwd": gemm(S, d, S, B * A),
        "softmax_bwd": kern("softmax", 5 * sq),
        "gemm_dq_bwd": gemm(S, d, S, B * A),
        "gemm_dk_bwd": gemm(S, d, S, B * A),
        "merge_qkv_grad": kern("merge_qkv_grad", 18 * Th),
        "gemm_qkv_dgrad": gemm(T, H, 3 * H),
        "gemm_qkv_wgrad": gemm(H, 3 * H, T),
        # the two LayerNorm backwards (input and parameter parts) as one stated kernel
        "ln_bwd": kern("norm", 2 * ((4 + 4) + (4 + 4 + 8)) * Th),
    }
    measured = {}
    for line in open(sys.argv[2]):
        parts = line.split()
        if len(parts) == 4 and parts[2].isdigit():
            measured[parts[0]] = float(parts[1])
    measured["ln_bwd"] = measured.pop("ln_bwd_input", 0) + measured.pop("ln_bwd_params", 0)
    rows = sorted(pred, key=lambda k: -(measured.get(k, 0) - pred[k] * CALLS * 1e3))
    print(f"{'op':18s} {'measured ms':>12s} {'simulated ms':>13s} {'difference':>11s}")
    tm = tp = 0.0
    for k in rows:
        m, p = measured.get(k, 0.0), pred[k] * CALLS * 1e3
        tm, tp = tm + m, tp + p
        print(f"{k:18s} {m:12.2f} {p:13.2f} {m - p:+11.2f}")
    print(f"{'layers, total':18s} {tm:12.2f} {tp:13.2f} {tm - tp:+11.2f}")
    rest = sum(v for k, v in measured.items() if k not in pred)
    print(f"not per layer (head, loss, embedding, Adam): measured {rest:.2f} ms")


if __name__ == "__main__":
    main()
