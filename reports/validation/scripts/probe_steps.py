"""What the probes' analyze.py scripts share (reports/validation/{clock,sched,host_call}_probe/):
the runs of a probe folder, and a run's timed steps split into its fastest and slowest ones."""
import glob
import json
import os
import statistics

EDGE = 6  # steps compared at each end (probe_clocks.sh's rule)


def probe_runs(folder):
    """[(launch folder name, measured-run JSON)] of FOLDER/p2_*/, in launch order."""
    out = []
    for f in sorted(glob.glob(os.path.join(folder, "p2_*", "*[0-9].json"))):
        out.append((os.path.basename(os.path.dirname(f)), json.load(open(f))))
    return out


def fastest_slowest(rows):
    """rows (tuples whose first item is a step's time), sorted: the EDGE fastest and EDGE slowest."""
    order = sorted(rows)
    return order[:EDGE], order[-EDGE:]


def mean_ms(rows, i):
    """The mean of item i over rows, seconds to milliseconds."""
    return 1e3 * statistics.mean(r[i] for r in rows)
