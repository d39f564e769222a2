#!/usr/bin/env python3
"""Validation call 36: does pinning each rank to CPUs of its own even out the ranks' host pace?

Reads pin4_K/{free,pinned}/probe_*.json (call 36, 4 x H100; and pin4_h200_1/, call 37's pair on 4 x H200) (run_step.py, the 4-stage 1F1B with 16 micro-batches on
the rows' GPT, launches alternating free and pinned: PIN_CPUS_PER_RANK=8) and prints, per launch,
the step and each rank's backward and forward calls a micro-batch (host wall time, median over the
timed steps, from stack.details.host_call_timing), the ranks' spread (slowest over fastest
backward), and the rule of reports/validation/README.md, row 36.

    python3 reports/validation/pin_probe/analyze.py
"""
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from host_calls import per_rank_call_seconds as per_rank  # noqa: E402


def main():
    spread = {}  # (launch folder, mode) -> the ranks' spread
    print("| launch | mode | step (ms) | backward a micro-batch, ranks 0-3 (ms) | forward, ranks 0-3 (ms) | slowest / fastest backward |")
    print("|---|---|---|---|---|---|")
    for d in sorted(glob.glob(os.path.join(HERE, "pin4_*"))):
        for mode in ("free", "pinned"):
            files = [f for f in glob.glob(os.path.join(d, mode, "probe_*.json")) if not f.endswith(".model.json")]
            if not files:
                continue
            run = json.load(open(files[0]))
            ranks = per_rank(run)
            bwd = [b for b, _ in ranks]
            s = max(bwd) / min(bwd)
            spread[(os.path.basename(d), mode)] = s
            print(f"| {os.path.basename(d)[5:]} | {mode} | {1e3 * run['measured']['step_time_s']:.1f} | "
                  + ", ".join(f"{1e3 * b:.2f}" for b in bwd) + " | " + ", ".join(f"{1e3 * f:.2f}" for _, f in ranks)
                  + f" | {s:.2f} |")
    call36 = {m: [v for (d, mode), v in spread.items() if mode == m and d[5:].isdigit()] for m in ("free", "pinned")}
    if call36["free"] and call36["pinned"]:
        free, pinned = statistics.median(call36["free"]), statistics.median(call36["pinned"])
        verdict = ("placement named" if pinned <= 1.10 and free >= 1.25 else
                   "not placement" if pinned >= 1.25 else "undecided")
        print(f"\nRule (reports/validation/README.md, row 36): the ranks' spread, median over launches pin4_1..3: "
              f"free {free:.2f}, pinned {pinned:.2f}: {verdict}")
    pair = (spread.get(("pin4_h200_1", "free")), spread.get(("pin4_h200_1", "pinned")))
    if None not in pair:
        free, pinned = pair
        verdict = ("pinning evens it" if free >= 1.25 and pinned <= 1.10 else
                   "not pinning" if free >= 1.25 and pinned >= 1.25 else "undecided")
        print(f"Rule (reports/validation/README.md, row 37), pin4_h200_1: free {free:.2f}, pinned {pinned:.2f}: {verdict}")

if __name__ == "__main__":
    main()
