#!/usr/bin/env python3
"""Validation call 18's rule, applied (reports/validation/README.md, row "18"): per launch and rank,
the 6 slowest against the 6 fastest timed steps; the host's wall time inside the forward calls,
inside the backward calls, and outside the compute calls (the step less every timed call's wall
time), with the calling thread's CPU time in the calls beside (stack.details.host_call_timing). The
rule names, for rank 0, the part holding at least half the step-time difference in both launches.
From the repository root:

    python3 reports/validation/host_call_probe/analyze.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from probe_steps import fastest_slowest, mean_ms, probe_runs  # noqa: E402
PARTS = ("forward calls", "backward calls", "outside the calls")


def main():
    shares = {p: [] for p in PARTS}
    print("| launch | rank | steps (ms), fastest 6 / slowest 6 | forward calls: wall (CPU) | backward calls: wall (CPU) | "
          "outside the calls | share of the difference: forward / backward / outside |")
    print("|---|---|---|---|---|---|---|")
    for launch, run in probe_runs(HERE):
        times = run["measured"]["step_times_s"]
        for rank_doc in run["stack"]["details"]["host_call_timing"]["per_rank"]:
            rows = []
            for dt, calls in zip(times, rank_doc["per_step"]):
                fwd = calls.get("forward_one_chunk", [0.0, 0.0])
                bwd = calls.get("backward_one_chunk", [0.0, 0.0])
                inside = sum(wall for wall, *_ in calls.values())
                rows.append((dt, fwd[0], bwd[0], dt - inside, fwd[1], bwd[1]))
            fast, slow = fastest_slowest(rows)
            m = mean_ms
            diff = m(slow, 0) - m(fast, 0)
            part = [(m(slow, i) - m(fast, i)) / diff for i in (1, 2, 3)]
            if rank_doc["rank"] == 0:
                for p, v in zip(PARTS, part):
                    shares[p].append(v)
            print(f"| {launch} | {rank_doc['rank']} | {m(fast, 0):.1f} / {m(slow, 0):.1f} | "
                  f"{m(fast, 1):.1f} ({m(fast, 4):.1f}) / {m(slow, 1):.1f} ({m(slow, 4):.1f}) | "
                  f"{m(fast, 2):.1f} ({m(fast, 5):.1f}) / {m(slow, 2):.1f} ({m(slow, 5):.1f}) | "
                  f"{m(fast, 3):.1f} / {m(slow, 3):.1f} | {part[0]:.0%} / {part[1]:.0%} / {part[2]:.0%} |")
    named = [p for p, v in shares.items() if all(x >= 0.5 for x in v)]
    print("\n" + (f"named: {named[0]} (at least half the difference in every launch, rank 0)" if named
                  else "undecided by the rule: no part holds half the difference in every launch (rank 0)"))


if __name__ == "__main__":
    main()
