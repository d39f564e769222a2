#!/usr/bin/env python3
"""Compare what two versions of run_step.py wrote for the same smoke plan (run_step_smoke.sh with
REFERENCE=...): the same files, the same keys at every level of each measured run, and the same
values wherever a value does not depend on timing (strategy, stack details, parameters and peak
memory per rank, the trainsim model file). Exits 1 on any difference, listing each.

    python3 reports/validation/scripts/run_step_compare.py DIR/new DIR/reference
"""
import glob
import json
import os
import sys

# Timings and what the host did: differ from run to run by nature.
TIMED = {"date", "command", "warmup_step_times_s", "step_times_s", "step_time_s", "step_time_spread",
         "step_times_s_per_rank", "tokens_per_s", "build_s", "cpu_steal_fraction", "loss_last_step",
         "step_wall_clock_starts", "optimizer_host_wall", "thread_schedule", "python_gc", "busy_timing",
         "host_call_timing", "busy", "peak_reserved_bytes"}


def keys(doc, path=""):
    """Every key path of a JSON document (list items by their first element's keys)."""
    out = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(path + "/" + k)
            if k not in TIMED:
                out |= keys(v, path + "/" + k)
    elif isinstance(doc, list) and doc and isinstance(doc[0], (dict, list)):
        out |= keys(doc[0], path + "[]")
    return out


def values(doc, path=""):
    """{key path: value} of every leaf not under a timed key."""
    out = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in TIMED:
                out.update(values(v, path + "/" + k))
    else:
        out[path] = doc
    return out


def main():
    new, ref = sys.argv[1], sys.argv[2]
    problems = []
    names = lambda d: sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "smoke_*.json")))
    if names(new) != names(ref):
        problems.append(f"files differ: {names(new)} against {names(ref)}")
    for n in names(new):
        if n not in names(ref):
            continue
        a, b = json.load(open(os.path.join(new, n))), json.load(open(os.path.join(ref, n)))
        for k in sorted(keys(a) ^ keys(b)):
            problems.append(f"{n}: key {k} only in {'new' if k in keys(a) else 'reference'}")
        va, vb = values(a), values(b)
        for k in sorted(set(va) & set(vb)):
            if va[k] != vb[k]:
                problems.append(f"{n}: {k}: {va[k]!r} against {vb[k]!r}")
    for p in problems:
        print(p)
    print(f"{len(names(new))} files compared, {len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
