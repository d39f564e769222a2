#!/usr/bin/env python3
"""Measures how a 1F1B pipeline's replayed step grows with its micro-batch count, one count at a
time, to show the period the micro-batch fold must use (sim/micro_batch_fold.hpp).

Usage: python3 reports/perf/fold_periods.py [--trainsim build/trainsim] > reports/perf/fold_periods.md
Each row replays the step at every count in its range (`trainsim simulate`, micro-batch fold
off where the count is too small to fold anyway) and lists the counts whose increment differs
from the most common one.
"""
import argparse
import collections
import json
import os
import subprocess
import tempfile

CASES = [
    # model, hw, tp, pp, dp, recompute, first count, last count
    ("megatron-1t", "dgx2", 16, 36, 2, "selective", 37, 110),
    ("megatron-1t", "dgx2", 16, 48, 1, "full", 49, 110),
    ("megatron-1t", "dgx2", 16, 44, 1, "full", 45, 110),
    ("megatron-8.3b", "dgx-a100", 8, 5, 1, "selective", 6, 45),
    ("megatron-8.3b", "dgx-a100", 8, 7, 1, "selective", 8, 45),
    ("megatron-8.3b", "dgx-a100", 8, 4, 1, "selective", 5, 45),
]


def simulate(trainsim, model, hw, strategy, tmp):
    path = os.path.join(tmp, "strategy.json")
    out = os.path.join(tmp, "out.json")
    with open(path, "w") as f:
        json.dump(strategy, f)
    subprocess.run([trainsim, "simulate", "--model", model, "--hw", hw, "--strategy", path, "--format", "json", "-o", out],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        d = json.load(f)
    text = subprocess.run([trainsim, "simulate", "--model", model, "--hw", hw, "--strategy", path],
                          check=True, capture_output=True, text=True).stdout
    note = next((l.strip() for l in text.splitlines() if l.strip().startswith("Note: pipeline")), "")
    return d["step_time_s"], note


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainsim", default="build/trainsim")
    a = ap.parse_args()
    print("# The period of a pipeline's step in its micro-batches\n")
    print("Regenerate: `python3 reports/perf/fold_periods.py --trainsim build/trainsim > reports/perf/fold_periods.md`.\n")
    print("Each row replays a 1F1B step (micro-batch 1, sequence parallelism, ZeRO-1) at every micro-batch count in its "
          "range and compares each count's step with the one before. Where the stages hold unequal numbers of layers the "
          "increment is not the same at every count: it differs once every as many micro-batches as there are stages of "
          "the heaviest kind. The micro-batch fold (sim/micro_batch_fold.hpp) therefore tries that period first for such "
          "pipelines; a line through three counts one apart would miss the step (for the first row at 576 micro-batches "
          "the walk's did, by 0.02 s of 192.28 s).\n")
    print("| model | cluster | tp x pp x dp | recompute | stages (layers) | counts | common increment (s) | counts with another increment (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for model, hw, tp, pp, dp, recompute, lo, hi in CASES:
            steps, note = {}, ""
            for n in range(lo, hi + 1):
                s = {"schema_version": 1, "gpus": tp * pp * dp, "tp": tp, "pp": pp, "dp": dp, "sp": True,
                     "schedule": "1f1b", "zero": 1, "recompute": recompute, "micro_batch": 1, "global_batch": dp * n}
                steps[n], note = simulate(a.trainsim, model, hw, s, tmp)
            inc = {n: round(steps[n] - steps[n - 1], 9) for n in range(lo + 1, hi + 1)}
            common = collections.Counter(inc.values()).most_common(1)[0][0]
            other = ", ".join(f"{n}: {v:.9f}" for n, v in inc.items() if v != common) or "none"
            stages = note.replace("Note: pipeline: ", "").replace(" per virtual stage", "")
            print(f"| {model} | {hw} | {tp} x {pp} x {dp} | {recompute} | {stages} | {lo}..{hi} | {common:.9f} | {other} |")


if __name__ == "__main__":
    main()
