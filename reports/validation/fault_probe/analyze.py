#!/usr/bin/env python3
"""Validation call 27: do the 2-stage pipelines' stage calls take page faults or system time on the
real GPT that they do not on the tiny GPT of the host calibration? (reports/validation/README.md,
row "27", has the rule, written before the call.)

    python3 reports/validation/fault_probe/analyze.py

Call 30 (row "30") asks, at the 4-stage 1F1B row's shape, whether rank 0's stage calls take longer on
the real GPT than on the tiny one on one host; its table follows.
"""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
CALLS = ("forward_one_chunk", "backward_one_chunk")
IMPLICATED, NOT_IMPLICATED = 1000, 200  # process page faults a step more on the real GPT, the rule's


def per_call(path):
    """{rank: {call: [wall ms, CPU ms, system ms, thread faults, process faults]}}, medians over the timed steps."""
    d = json.load(open(path))
    out = {}
    for rd in d["stack"]["details"]["host_call_timing"]["per_rank"]:
        out[rd["rank"]] = {c: [statistics.median(st.get(c, [0.0] * 5)[i] for st in rd["per_step"]) * (1e3 if i < 3 else 1)
                               for i in range(5)] for c in CALLS}
    return d["measured"]["step_time_s"], out


def main():
    print("| schedule | GPT | step (ms) | rank | forward calls: wall / CPU / system (ms), faults thread / process | "
          "backward calls: wall / CPU / system (ms), faults thread / process |")
    print("|---|---|---|---|---|---|")
    extra = {}
    for sched in ("gpipe", "1f1b"):
        faults = {}
        for size in ("real", "tiny"):
            step, calls = per_call(os.path.join(HERE, "faults_1", f"{size}_{sched}", f"probe_{size}_{sched}.json"))
            for rank, c in sorted(calls.items()):
                f, b = c["forward_one_chunk"], c["backward_one_chunk"]
                print(f"| {sched} | {size} | {1e3 * step:.1f} | {rank} | {f[0]:.1f} / {f[1]:.1f} / {f[2]:.2f}, {f[3]:.0f} / {f[4]:.0f} | "
                      f"{b[0]:.1f} / {b[1]:.1f} / {b[2]:.2f}, {b[3]:.0f} / {b[4]:.0f} |")
            faults[size] = calls[0]["forward_one_chunk"][4] + calls[0]["backward_one_chunk"][4]
        extra[sched] = faults["real"] - faults["tiny"]
    said = ", ".join(f"{s} {v:+.0f}" for s, v in extra.items())
    verdict = ("implicated" if all(v >= IMPLICATED for v in extra.values()) else
               "not implicated" if all(v < NOT_IMPLICATED for v in extra.values()) else "undecided")
    print(f"\nRank 0's process page faults a step in its forward and backward calls, real minus tiny: {said}: "
          f"faults {verdict} (rule: at least {IMPLICATED} in both implicated, under {NOT_IMPLICATED} in both not).")


def four_stages():
    """Call 30: the 4-stage 1F1B with 16 micro-batches, rank 0's forward and backward calls summed."""
    print("\n| GPT | step (ms) | rank | forward calls: wall / CPU (ms) | backward calls: wall (ms) | both, wall (ms) | process faults |")
    print("|---|---|---|---|---|---|---|")
    sums = {}
    for size in ("real", "tiny"):
        path = os.path.join(HERE, "faults4_1", f"{size}_1f1b", f"probe_{size}_1f1b.json")
        d = json.load(open(path))
        for rd in d["stack"]["details"]["host_call_timing"]["per_rank"]:
            steps = [(st.get("forward_one_chunk", [0.0] * 5), st.get("backward_one_chunk", [0.0] * 5)) for st in rd["per_step"]]
            both = statistics.median(f[0] + b[0] for f, b in steps) * 1e3
            if rd["rank"] == 0:
                sums[size] = both
            print(f"| {size} | {1e3 * d['measured']['step_time_s']:.1f} | {rd['rank']} | "
                  f"{statistics.median(f[0] for f, _ in steps) * 1e3:.1f} / {statistics.median(f[1] for f, _ in steps) * 1e3:.1f} | "
                  f"{statistics.median(b[0] for _, b in steps) * 1e3:.1f} | {both:.1f} | {statistics.median(f[4] + b[4] for f, b in steps):.0f} |")
    extra = sums["real"] / sums["tiny"] - 1
    verdict = "larger on the real GPT" if extra >= 0.15 else "not larger" if abs(extra) <= 0.05 else "undecided"
    print(f"\nRank 0's forward and backward calls a step, real against tiny: {100 * extra:+.1f}%: {verdict} "
          "(rule: at least +15% larger, within 5% not larger).")


def all_tables():
    main()
    four_stages()


if __name__ == "__main__":
    all_tables()
