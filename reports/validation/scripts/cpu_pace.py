#!/usr/bin/env python3
"""The pace of each virtual CPU, alone and beside one other (issue 10).

The lent machines show 64 vCPUs, one thread a core and one NUMA node, so from inside the guest two
vCPUs that share a physical core (hyperthreads), or a vCPU that shares its core with the
hypervisor's own work, cannot be told apart from the others. A rank whose host thread lands on such
a vCPU runs the same Python more slowly while its steal and run-queue wait stay at zero, which is
what the small pipelines' stage 0 showed on some hosts (reports/validation/pin_probe/).

This times one fixed pure-Python loop (the kind of work the ranks' host threads do) in a process
pinned to one vCPU:
- singles: every vCPU in turn, the others idle; the fastest of `--repeat` runs;
- pairs: two processes started together on vCPUs a and b, for (i, i + n/2) and (2k, 2k + 1), the
  two usual numberings of hyperthread siblings; each side's time over its single time.

    python3 reports/validation/scripts/cpu_pace.py --out FILE
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time

LOOP = 1_500_000  # ~0.1 s of interpreted work on the lent machines' CPUs


def spin(n):
    x = 0
    for i in range(n):
        x = (x + i * 7) % 1_000_003
    return x


def pinned_loop(cpu, start, out):
    os.sched_setaffinity(0, {cpu})
    spin(LOOP // 20)  # warm the interpreter on this CPU
    start.wait()
    t0 = time.perf_counter()
    spin(LOOP)
    out.put((cpu, time.perf_counter() - t0))


def run_together(cpus):
    """Each CPU's loop time with the loops started together, one process pinned to each CPU."""
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=pinned_loop, args=(c, start, out)) for c in cpus]
    for p in procs:
        p.start()
    time.sleep(0.05)  # every process pinned and warmed before the start
    start.set()
    times = dict(out.get() for _ in cpus)
    for p in procs:
        p.join()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    n = len(cpus)
    singles = {c: min(run_together([c])[c] for _ in range(args.repeat)) for c in cpus}
    pairs = sorted({(cpus[i], cpus[i + n // 2]) for i in range(n // 2)} | {(cpus[i], cpus[i + 1]) for i in range(0, n - 1, 2)})
    pair_rows = []
    for a, b in pairs:
        t = run_together([a, b])
        pair_rows.append({"a": a, "b": b, "seconds_a": t[a], "seconds_b": t[b],
                          "slowdown": max(t[a] / singles[a], t[b] / singles[b])})
    doc = {"schema_version": 1, "kind": "trainsim.cpu_pace_probe",
           "provenance": {"script": "reports/validation/scripts/cpu_pace.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "loop_iterations": LOOP, "repeat": args.repeat},
           "singles": [{"cpu": c, "seconds": singles[c]} for c in cpus],
           "pairs": pair_rows}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    ordered = sorted(singles.values())
    median = ordered[len(ordered) // 2]
    slowest = max(cpus, key=lambda c: singles[c])
    worst = max(pair_rows, key=lambda r: r["slowdown"])
    print(f"[cpu_pace] {n} CPUs: single loop median {1e3 * median:.1f} ms, slowest CPU {slowest} at "
          f"{singles[slowest] / median:.3f} of the median; {len(pair_rows)} pairs, worst ({worst['a']}, {worst['b']}) "
          f"slowdown {worst['slowdown']:.3f}, {sum(r['slowdown'] >= 1.3 for r in pair_rows)} at 1.3 or more", flush=True)


if __name__ == "__main__":
    main()
