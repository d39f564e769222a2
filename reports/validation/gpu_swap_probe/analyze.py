#!/usr/bin/env python3
"""Validation call 38: does stage 0's slower host follow the rank or GPU 0? Does a launch cost more
on one GPU? Do the vCPUs run at one pace?

Reads, beside this file (reports/validation/README.md, row 38, has the rules, written before the
call ran):
- swap4_K/{order0123,order3210}/probe_order*.json: run_step.py, the 4-stage 1F1B with 16
  micro-batches on the rows' GPT; order0123 puts rank r on GPU r, order3210 on GPU 3 - r
  (CUDA_VISIBLE_DEVICES=3,2,1,0). Each rank's backward and forward calls a micro-batch (host wall
  time, median over the timed steps, stack.details.host_call_timing), and where its two busiest
  threads last ran at each step's end (stack.details.thread_schedule, last_cpu);
- launch4_K/gpuG.json: launch_cost_probe.py on GPU G, the four GPUs at once;
- cpumap_K/cpu_pace.json: cpu_pace.py, each vCPU's pace alone and in pairs.

    python3 reports/validation/gpu_swap_probe/analyze.py
"""
import collections
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from host_calls import per_rank_call_seconds as per_rank  # noqa: E402
SLOW = 1.15  # a rank is slow when its backward calls take this much over the other ranks' median


def slow_ranks(bwd):
    """The ranks whose backward calls take SLOW times the median of the other three or more."""
    return [r for r, b in enumerate(bwd) if b >= SLOW * statistics.median(x for i, x in enumerate(bwd) if i != r)]


def placements(run):
    """Per rank: the CPUs its two busiest threads last ran on at the timed steps' ends, most common first."""
    out = []
    for r in run["stack"]["details"]["thread_schedule"]["per_rank"]:
        seen = collections.Counter()
        for step in r["threads_per_step"]:
            for t in step[:2]:
                seen[t.get("last_cpu", -1)] += 1
        out.append([c for c, _ in seen.most_common(4)])
    return out


def swap_launches():
    rows = []  # (launch, order, step s, [(bwd, fwd)], slow ranks, placements)
    for d in sorted(glob.glob(os.path.join(HERE, "swap4_*"))):
        for order in ("0123", "3210"):
            files = [f for f in glob.glob(os.path.join(d, "order" + order, "probe_*.json")) if not f.endswith(".model.json")]
            if not files:
                continue
            run = json.load(open(files[0]))
            ranks = per_rank(run)
            rows.append((os.path.basename(d)[6:], order, run["measured"]["step_time_s"], ranks,
                         slow_ranks([b for b, _ in ranks]), placements(run)))
    return rows


def swap_rule(rows):
    in_order = [r for r in rows if r[1] == "0123"]
    reversed_ = [r for r in rows if r[1] == "3210"]
    if len(in_order) < 2 or len(reversed_) < 2:
        return "not decided (fewer than two launches of each order)"
    if not all(r[4] == [0] for r in in_order):
        return "undecided (rank 0 on GPU 0 is not the one slow rank in every launch in order)"
    if all(r[4] == [3] for r in reversed_):
        return "follows GPU 0"
    if all(0 in r[4] for r in reversed_):
        return "follows stage 0"
    return "undecided"


def launch_rule():
    by_gpu = collections.defaultdict(list)
    for d in sorted(glob.glob(os.path.join(HERE, "launch4_*"))):
        for g in range(4):
            f = os.path.join(d, f"gpu{g}.json")
            if os.path.exists(f):
                by_gpu[g].append(statistics.median(json.load(open(f))["operators"]["mix_of_20"]["idle_us"]))
    if len(by_gpu) < 4:
        return {}, "not decided (a GPU has no launch probe)"
    cost = {g: statistics.median(v) for g, v in by_gpu.items()}
    others = statistics.median(cost[g] for g in (1, 2, 3))
    mid = statistics.median(cost.values())
    if cost[0] >= SLOW * others:
        verdict = "GPU 0 dearer"
    elif all(abs(c / mid - 1) <= 0.05 for c in cost.values()):
        verdict = "even"
    else:
        verdict = "undecided"
    return cost, verdict


def cpu_rule():
    files = sorted(glob.glob(os.path.join(HERE, "cpumap_*", "cpu_pace.json")))
    if not files:
        return None, "not decided (no map)"
    doc = json.load(open(files[0]))
    singles = {s["cpu"]: s["seconds"] for s in doc["singles"]}
    median = statistics.median(singles.values())
    slowest = max(singles, key=singles.get)
    siblings = [(p["a"], p["b"]) for p in doc["pairs"] if p["slowdown"] >= 1.3]
    uneven = "uneven vCPUs" if singles[slowest] >= SLOW * median else "one pace"
    smt = ("siblings found" if len(siblings) >= 16 else
           "no siblings" if all(p["slowdown"] < 1.1 for p in doc["pairs"]) else "undecided")
    # Described, not ruled on: the two paces a vCPU ran at, alone or in a pair (every timed loop, in
    # units of the singles' median), split at SLOW; and how many vCPUs changed pace between their
    # single run and their pairs (a pace that is the vCPU's own would not change).
    loops = list(singles.values()) + [p["seconds_a"] for p in doc["pairs"]] + [p["seconds_b"] for p in doc["pairs"]]
    fast = [t / median for t in loops if t < SLOW * median]
    slow = [t / median for t in loops if t >= SLOW * median]
    changed = set()
    for p in doc["pairs"]:
        for c, t in ((p["a"], p["seconds_a"]), (p["b"], p["seconds_b"])):
            if (t >= SLOW * median) != (singles[c] >= SLOW * median):
                changed.add(c)
    return {"median_s": median, "slowest": (slowest, singles[slowest] / median), "siblings": siblings,
            "slow_cpus": sorted(c for c, t in singles.items() if t >= SLOW * median),
            "modes": (statistics.median(fast), len(fast), statistics.median(slow) if slow else None, len(slow)),
            "changed": sorted(changed), "cpus": len(singles)}, f"{uneven}; {smt}"


def main():
    rows = swap_launches()
    print("| launch | GPUs (rank 0..3) | step (ms) | backward a micro-batch, ranks 0-3 (ms) | forward, ranks 0-3 (ms) | "
          "slow ranks | CPUs of each rank's two busiest threads |")
    print("|---|---|---|---|---|---|---|")
    for launch, order, step, ranks, slow, where in rows:
        print(f"| {launch} | {','.join(order)} | {1e3 * step:.1f} | " + ", ".join(f"{1e3 * b:.2f}" for b, _ in ranks)
              + " | " + ", ".join(f"{1e3 * f:.2f}" for _, f in ranks) + f" | {slow or '-'} | "
              + "; ".join(",".join(str(c) for c in w) for w in where) + " |")
    print(f"\nRule A (row 38), the slow rank against the GPUs: {swap_rule(rows)}")
    cost, verdict = launch_rule()
    if cost:
        print("Launch cost, a 20-operator call into an idle GPU (us, median over the launch4 phases): "
              + ", ".join(f"GPU {g} {c:.1f}" for g, c in sorted(cost.items())))
    print(f"Rule B (row 38), launch cost by GPU: {verdict}")
    pace, verdict = cpu_rule()
    if pace:
        print(f"vCPU pace: single loop median {1e3 * pace['median_s']:.1f} ms; slowest vCPU {pace['slowest'][0]} at "
              f"{pace['slowest'][1]:.3f} of it; vCPUs at {SLOW} or more: {pace['slow_cpus'] or 'none'}; pairs slowed 1.3 "
              f"or more: {len(pace['siblings'])} {pace['siblings'][:8]}")
    print(f"Rule C (row 38), vCPUs: {verdict}")
    if pace:
        f, nf, sl, ns = pace["modes"]
        print(f"Two paces (every timed loop, singles and pairs, split at {SLOW} of the singles' median): {nf} loops at a "
              f"median {f:.2f}, {ns} at {sl:.2f}, {sl / f:.2f} times slower; {len(pace['changed'])} of the "
              f"{pace['cpus']} vCPUs ran at the other pace in a pair than alone")


if __name__ == "__main__":
    main()
