#!/usr/bin/env python3
"""Validation call 20: does costing the fused CPU AdamW tensor by tensor, from the bench's sets of
equal tensors, predict the optimizer over the GPT shard's own tensors? (reports/validation/README.md,
row "20", has the rule, written before the call.)

    python3 reports/calibration/h200x4-call20/analyze.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "calibrate", "scripts"))
import merge_offload_calibration  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 0.15  # the rule's


def seconds_per_tensor(runs):
    """Per size, the sets' medians over their tensors, as the profile gets them (unrounded)."""
    return [(p["elements"], p["seconds"]) for p in merge_offload_calibration.seconds_per_tensor(runs, digits=None)]


def tensor_seconds(points, e):
    """As sim/cost_model.cpp: linear between sizes, the smallest size's time below, the largest's per element above."""
    if e <= points[0][0]:
        return points[0][1]
    if e >= points[-1][0]:
        return points[-1][1] * e / points[-1][0]
    for (e0, t0), (e1, t1) in zip(points, points[1:]):
        if e <= e1:
            return t0 + (t1 - t0) * (e - e0) / (e1 - e0)


def shard(layers, hidden, ranks, vocab=50304, seq=2048):
    """The GPT shard's tensors, as torch_offload_bench.py's gpt_shard (which the run recorded by size)."""
    h = hidden
    layer = [h, h, 3 * h * h, 3 * h, h * h, h, h, h, 4 * h * h, 4 * h, 4 * h * h, h]
    return [-(-e // ranks) for e in [vocab * h, seq * h] + layer * layers + [h, h]]


def main():
    verdicts = []
    print("| ranks | threads a rank | tensors | measured (ms) | per tensor by size (ms) | error | big-tensor rate only (ms) | error |")
    print("|---|---|---|---|---|---|---|---|")
    for ranks in (2, 4):
        d = json.load(open(os.path.join(HERE, "adamcheck", f"torch_offload_bench_r{ranks}.json")))
        m = d["adam_model"]
        sizes = shard(m["layers"], m["hidden"], ranks)
        assert len(sizes) == m["tensors"] and sum(sizes) == m["params"], "the shard differs from the run's"
        points = seconds_per_tensor(d["adam"])
        by_tensor = sum(tensor_seconds(points, e) for e in sizes)
        big = [r for r in d["adam"] if r["tensors"] == 16][0]["params_per_s"]
        rate_only = m["params"] / big
        measured = m["step_s"]["median"]
        err = by_tensor / measured - 1
        verdicts.append(abs(err) <= TOLERANCE)
        print(f"| {ranks} | {d['threads_per_rank']} | {m['tensors']} | {1e3 * measured:.0f} "
              f"({1e3 * m['step_s']['min']:.0f}-{1e3 * m['step_s']['max']:.0f}) | {1e3 * by_tensor:.0f} | {100 * err:+.1f}% | "
              f"{1e3 * rate_only:.0f} | {100 * (rate_only / measured - 1):+.1f}% |")
    print()
    print("Per-tensor costing " + ("holds (within 15% at 2 and 4 ranks)" if all(verdicts) else
                                   "misses the rule's 15% at " + " and ".join(f"{r} ranks" for r, ok in zip((2, 4), verdicts) if not ok)))


if __name__ == "__main__":
    main()
