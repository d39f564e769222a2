#!/usr/bin/env python3
"""Validation call 21: is the FSDP2 offload step's CPU AdamW slower inside the step than alone over
the same tensors in the same process? (reports/validation/README.md, row "21", has the rule, written
before the call.)

    python3 reports/validation/optimizer_probe/analyze.py
"""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
IMPLICATED, NOT_IMPLICATED = 1.25, 1.10  # the rule's


def main():
    ratios = []
    print("| launch | steal over its timed steps | step (ms) | rank | opt.step() in the step, median (ms; each) | alone, median (ms; each) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for launch in ("optcheck_1", "optcheck_2"):
        d = json.load(open(os.path.join(HERE, launch, "probe_fsdp2-offload_L24-h1024_mb4x2.json")))
        for r in d["stack"]["details"]["optimizer_host_wall"]["per_rank"]:
            inside, alone = statistics.median(r["in_step_s"]), statistics.median(r["alone_s"])
            if r["rank"] == 0:
                ratios.append(inside / alone)
            print(f"| {launch} | {100 * d['provenance']['cpu_steal_fraction']:.1f}% | {1e3 * d['measured']['step_time_s']:.0f} | "
                  f"{r['rank']} | {1e3 * inside:.0f} ({', '.join(f'{1e3 * x:.0f}' for x in r['in_step_s'])}) | "
                  f"{1e3 * alone:.0f} ({', '.join(f'{1e3 * x:.0f}' for x in r['alone_s'])}) | {inside / alone:.2f} |")
    print()
    if all(x >= IMPLICATED for x in ratios):
        verdict = "implicated"
    elif all(x <= NOT_IMPLICATED for x in ratios):
        verdict = "not implicated"
    else:
        verdict = "undecided"
    print(f"Rank 0's ratios: {', '.join(f'{x:.2f}' for x in ratios)}: the step context is {verdict} (rule: >= {IMPLICATED} "
          f"in both launches implicated, <= {NOT_IMPLICATED} in both not implicated).")


if __name__ == "__main__":
    main()
