#!/usr/bin/env python3
"""Validation call 17's rule, applied (reports/validation/README.md, row "17"): per launch, rank 0's two
threads with the most CPU time in each timed step (stack.details.thread_schedule); their summed
run-queue wait (runnable, not on a CPU) in the 6 slowest steps against the 6 fastest, and against the
difference of those steps' times; each named thread's CPU time beside. From the repository root:

    python3 reports/validation/sched_probe/analyze.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from probe_steps import fastest_slowest, mean_ms, probe_runs  # noqa: E402


def main():
    verdicts = []
    print("| launch | rank | steps (ms), fastest 6 / slowest 6 | run-queue wait of its two busiest threads (ms) | "
          "CPU time (ms), autograd's thread | main thread |")
    print("|---|---|---|---|---|---|")
    for launch, run in probe_runs(HERE):
        times = run["measured"]["step_times_s"]
        for rank_doc in run["stack"]["details"]["thread_schedule"]["per_rank"]:
            rows = []
            for dt, threads in zip(times, rank_doc["threads_per_step"]):
                busiest = sorted(threads, key=lambda t: -t["cpu_s"])[:2]
                autograd = sum(t["cpu_s"] for t in threads if t["name"].startswith("pt_autograd"))
                main_thread = max([t["cpu_s"] for t in threads if t["name"] in ("python", "python3", "pt_main_thread")] or [0.0])
                rows.append((dt, sum(t["runqueue_wait_s"] for t in busiest), autograd, main_thread))
            fast, slow = fastest_slowest(rows)
            mean = mean_ms
            if rank_doc["rank"] == 0:
                verdicts.append((mean(slow, 1) - mean(fast, 1)) / (mean(slow, 0) - mean(fast, 0)))
            print(f"| {launch} | {rank_doc['rank']} | {mean(fast, 0):.1f} / {mean(slow, 0):.1f} | "
                  f"{mean(fast, 1):.2f} / {mean(slow, 1):.2f} | {mean(fast, 2):.1f} / {mean(slow, 2):.1f} | "
                  f"{mean(fast, 3):.1f} / {mean(slow, 3):.1f} |")
    if all(v >= 0.5 for v in verdicts):
        print("\nimplicated: rank 0's wait grew by at least half the step-time difference in every launch")
    elif all(v < 0.1 for v in verdicts):
        print("\nnot implicated: rank 0's wait grew by under a tenth of the step-time difference in every launch")
    else:
        print("\nundecided by the rule")


if __name__ == "__main__":
    main()
