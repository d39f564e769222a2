#!/usr/bin/env python3
"""Validation call 16's rule, applied (reports/validation/README.md, row "16"): per launch, the mean SM
clock of GPU 0 (stage 0) over nvidia-smi's samples inside each timed step, the 6 slowest steps' mean
against the 6 fastest steps'. nvidia-smi's timestamps are the machine's local time, UTC there
(tz.txt). From the repository root:

    python3 reports/validation/clock_probe/analyze.py
"""
import csv
import datetime
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from probe_steps import fastest_slowest, mean_ms, probe_runs  # noqa: E402


def gpu_rows(name, gpu, fields):
    """(unix seconds, row) of one GPU from nvidia-smi's CSV `name`, rows of at least `fields` fields."""
    with open(os.path.join(HERE, name)) as f:
        for row in csv.reader(f, skipinitialspace=True):
            if len(row) < fields or int(row[0]) != gpu:
                continue
            t = datetime.datetime.strptime(row[1], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
            yield t.timestamp(), row


def samples(gpu):
    """[(unix seconds, SM MHz, power W)] of one GPU, in time order."""
    return [(t, float(row[2]), float(row[4])) for t, row in gpu_rows("clocks.csv", gpu, 5)]


def reasons(gpu):
    """[(unix seconds, the active clock-event reasons bitmask)] of one GPU."""
    return [(t, int(row[2], 16)) for t, row in gpu_rows("reasons.csv", gpu, 3)]


def main():
    gpu0 = samples(0)
    why = reasons(0)
    verdicts = []
    print("| launch | steps (ms), fastest 6 / slowest 6 (means) | GPU 0 SM clock (MHz), fastest 6 / slowest 6 | "
          "difference | power (W), fastest / slowest | samples a step | reasons seen (bitmask) |")
    print("|---|---|---|---|---|---|---|")
    for launch, run in probe_runs(HERE):
        starts = run["stack"]["details"]["step_wall_clock_starts"]
        times = run["measured"]["step_times_s"]
        per_step = []
        for start, dt in zip(starts, times):
            inside = [(c, p) for t, c, p in gpu0 if start <= t <= start + dt + 0.005]
            per_step.append((dt, statistics.mean(c for c, _ in inside), statistics.mean(p for _, p in inside), len(inside)))
        fast, slow = fastest_slowest(per_step)
        clock_fast, clock_slow = statistics.mean(x[1] for x in fast), statistics.mean(x[1] for x in slow)
        diff = 100 * (clock_slow - clock_fast) / clock_fast
        verdicts.append(diff)
        seen = sorted({m for t, m in why if starts[0] <= t <= starts[-1] + times[-1]})
        print(f"| {launch} | {mean_ms(fast, 0):.1f} / "
              f"{mean_ms(slow, 0):.1f} | {clock_fast:.0f} / {clock_slow:.0f} | {diff:+.1f}% | "
              f"{statistics.mean(x[2] for x in fast):.0f} / {statistics.mean(x[2] for x in slow):.0f} | "
              f"{min(x[3] for x in per_step)}-{max(x[3] for x in per_step)} | {', '.join(hex(m) for m in seen)} |")
    if all(d <= -5 for d in verdicts):
        print("\nimplicated: the slow steps' clock at least 5% below the fast steps' in every launch")
    elif all(abs(d) <= 2 for d in verdicts):
        print("\nnot implicated: the slow and fast steps' clocks within 2% in every launch")
    else:
        print("\nundecided by the rule")


if __name__ == "__main__":
    main()
