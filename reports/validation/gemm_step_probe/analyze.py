#!/usr/bin/env python3
"""Validation call 51's rule: does a training step run its GEMMs at the rate the same GPU runs them
alone? (reports/validation/README.md, row 51; calibrate/DEVICE_NOTES.md.)

    python3 reports/validation/gemm_step_probe/analyze.py --trace STEP.trace.json.gz \
        --before A/torch_layer_kernels.json --after C/torch_layer_kernels.json

The step is the single-GPU Llama row's configuration (16 layers of Llama 3 8B's shape, 2048 tokens
a micro-batch); its trace's GEMM kernels are matched to the layer's Linears by their order around
flash attention's kernels: the forward runs QKV, attention, the projection, gate-up, down; the
backward down, gate-up and the projection (input gradient, then weight gradient, each), attention's
backward, then QKV's two. Per product the median over the step's layers and micro-batches; S is their
sum over the twelve products. B is the same twelve products' sum from torch_layer_kernels.py's GEMM
probe on the same GPU (its "block" timing: 20 back to back, the GEMM bench's way), the mean of the
probes run before and after the step. Rule: |S / B - 1| <= 0.03 is "the GPU" (a step runs its GEMMs
at its GPU's isolated rate); S / B <= 0.95 is "the step" (a step runs them faster than its GPU alone);
otherwise undecided.
"""
import argparse
import bisect
import gzip
import json
import statistics

T, H, QKV, UP, F = 2048, 4096, 6144, 28672, 14336
# (out, in) of each Linear, as the probe's GEMM_LAYERS name them at 2048 tokens.
LINEARS = {"qkv": (QKV, H), "proj": (H, H), "up": (UP, H), "down": (H, F)}


def is_gemm(name):
    # cuBLAS's kernels; flash attention's names carry cutlass types too.
    return ("nvjet" in name or "gemm" in name.lower() or "cutlass" in name) and "flash" not in name


def step_products(path):
    doc = json.load(gzip.open(path))
    ks = sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel" and e.get("args", {}).get("device", 0) == 0),
                key=lambda e: e["ts"])
    g = [i for i, e in enumerate(ks) if is_gemm(e["name"])]
    out = {}
    for i, e in enumerate(ks):
        p = bisect.bisect_left(g, i)
        if "flash_fwd" in e["name"] and 1 <= p and p + 3 <= len(g):
            for lin, j in (("qkv", p - 1), ("proj", p), ("up", p + 1), ("down", p + 2)):
                out.setdefault((lin, "forward"), []).append(ks[g[j]]["dur"])
        if "flash_bwd_dq_dk_dv" in e["name"] and 6 <= p and p + 2 <= len(g):
            order = [("down", "input_grad"), ("down", "weight_grad"), ("up", "input_grad"), ("up", "weight_grad"),
                     ("proj", "input_grad"), ("proj", "weight_grad")]
            for k, key in enumerate(order):
                out.setdefault(key, []).append(ks[g[p - 6 + k]]["dur"])
            out.setdefault(("qkv", "input_grad"), []).append(ks[g[p]]["dur"])
            out.setdefault(("qkv", "weight_grad"), []).append(ks[g[p + 1]]["dur"])
    return {k: statistics.median(v) * 1e-6 for k, v in out.items()}, {k: len(v) for k, v in out.items()}


def probe_products(path):
    doc = json.load(open(path))
    res = {}
    for r in doc["gemm_probe"]:
        for lin, (o, i) in LINEARS.items():
            if (r["tokens"], r["out"], r["in"]) == (T, o, i):
                res[(lin, r["product"])] = r["block_s"]["median"]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    a = ap.parse_args()
    step, counts = step_products(a.trace)
    before, after = probe_products(a.before), probe_products(a.after)
    keys = sorted(before)
    if len(keys) != 12 or sorted(step) != keys:
        raise SystemExit(f"expected the twelve products in the step and the probes, got {sorted(step)} and {keys}")
    print(f"{'product':24s} {'step us':>9s} {'n':>4s} {'alone us':>9s} {'step/alone':>10s}")
    for k in keys:
        alone = (before[k] + after[k]) / 2
        flops = 2.0 * T * LINEARS[k[0]][0] * LINEARS[k[0]][1]
        print(f"{k[0] + ' ' + k[1]:24s} {step[k] * 1e6:9.1f} {counts[k]:4d} {alone * 1e6:9.1f} {step[k] / alone:10.3f}"
              f"   ({flops / step[k] / 1e12:.0f} and {flops / alone / 1e12:.0f} TFLOP/s)")
    S = sum(step.values())
    B = (sum(before.values()) + sum(after.values())) / 2
    print(f"S = {S * 1e3:.3f} ms, B = {B * 1e3:.3f} ms (before {sum(before.values()) * 1e3:.3f}, after "
          f"{sum(after.values()) * 1e3:.3f}), S / B = {S / B:.3f}")
    verdict = "the GPU" if abs(S / B - 1) <= 0.03 else "the step" if S / B <= 0.95 else "undecided"
    print(f"rule: {verdict}")


if __name__ == "__main__":
    main()
