#!/usr/bin/env python3
"""Validation call 19: the FSDP2 offload rows with the offload bench directly before each launch.

    python3 reports/calibration/h200x4-call19/analyze.py        (from the repository root, after a build)

Prints (1) each phase's steal on the two machines that came and the rule's verdict (a launch counts
when it and the bench before it lost at most 3% to the hypervisor; reports/validation/README.md, row
"19"), (2) each launch that ran beside its own bench, costed on a profile built as call 14's with
that bench (build/trainsim simulate), and (3) the fused CPU AdamW as the bench measured it per tensor
size against what the rows' profiled steps spent in it (their rank-0 traces), with call 14's bench
and rows beside them.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "calibrate", "scripts"))
import merge_offload_calibration  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)), ROOT)
CALL14 = "reports/calibration/h200x4-call14"
ROWS14 = "reports/validation/measured/call14-h200x4"
QUIET = 0.03  # the rule's limit, written before the call


def path(*p):
    return os.path.join(ROOT, *p)


def phase_steal(machine):
    """(phase, steal over it) from phases.txt: each stamp's /proc/stat cpu line, steal over the
    CPU time used or taken (user + nice + system + irq + softirq + steal), idle not counted."""
    lines = open(path(HERE, machine, "phases.txt")).read().splitlines()
    stamps = []
    for head, cpu in zip(lines[::2], lines[1::2]):
        f = [int(x) for x in cpu.split()[1:]]
        used = f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
        stamps.append((head.split()[1], used, f[7]))
    return [(a[0], (b[2] - a[2]) / (b[1] - a[1])) for a, b in zip(stamps, stamps[1:])]


def row_launch(machine, gpus, k):
    f = path(HERE, machine, f"g{gpus}_{k}", f"h200x{gpus}_fsdp2-offload_L24-h1024_mb4x2.json")
    return json.load(open(f)) if os.path.exists(f) else None


def predicted(run_dir, run, bench_files, hd_dirs, scratch):
    prof = os.path.join(scratch, "launch.profile.json")
    stacks = [os.path.join(d, f"torch_stack_dispatch_w{w}.json") for d in hd_dirs for w in (2, 4)]
    subprocess.run([sys.executable, path("calibrate/scripts/host_swap_profile.py"), "--base", "h200x4-measured",
                    "--name", "h200x4-call19-launch", "--description", "call 19: one launch's own bench",
                    "--stacks", *stacks, "--micro", path("reports/calibration/h200x4-call6/hd/torch_microbench.json"),
                    "--offload", *bench_files, "--out", prof], check=True, stdout=subprocess.DEVNULL)
    strategy = os.path.join(scratch, "strategy.json")
    json.dump(run["strategy"], open(strategy, "w"))
    out = subprocess.run([path("build/trainsim"), "simulate", "--model", os.path.join(run_dir, run["model"]),
                          "--strategy", strategy, "--hw", prof, "--stack", "pytorch-fsdp", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["step_time_s"]


def adamw_ms(trace):
    t = json.load(gzip.open(trace))
    return sum(e["dur"] for e in t["traceEvents"] if e.get("ph") == "X" and e.get("name") == "aten::_fused_adamw_") / 1e3


def per_tensor_ms(bench):
    """Per tensor size, the bench's median seconds over its tensors, as the profile gets them (unrounded)."""
    runs = json.load(open(bench))["adam"]
    return {p["elements"]: 1e3 * p["seconds"] for p in merge_offload_calibration.seconds_per_tensor(runs, digits=None)}


def main():
    print("## Steal per phase (the hypervisor's share of the CPU time used or taken)\n")
    for machine in ("machine1", "machine2", "machine3"):
        print(f"{machine}: " + ", ".join(f"{p} {100 * s:.1f}%" for p, s in phase_steal(machine)))
    print()
    counted = 0
    print("| machine | row | launch | its steal | its bench's steal | measured (ms) | predicted on its own bench (ms) | error |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for machine in ("machine1", "machine2"):
            steal = dict(phase_steal(machine))
            hd = [path(HERE, machine, d) for d in ("hd_1", "hd_2") if os.path.isdir(path(HERE, machine, d))]
            for gpus in (2, 4):
                for k in (1, 2, 3):
                    run = row_launch(machine, gpus, k)
                    if run is None:
                        continue
                    bench = path(HERE, machine, f"ob_{k}", f"torch_offload_bench_r{gpus}.json")
                    own = run["provenance"]["cpu_steal_fraction"]
                    before = steal[f"ob{gpus}:{k}"]
                    counts = own <= QUIET and before <= QUIET
                    counted += counts
                    # The other rank count's figures from call 14's bench: the row reads only its own.
                    other = path(CALL14, "ob", f"torch_offload_bench_r{6 - gpus}.json")
                    p = predicted(path(HERE, machine, f"g{gpus}_{k}"), run, [bench, other], hd, scratch)
                    m = run["measured"]["step_time_s"]
                    print(f"| {machine} | {gpus} GPUs | {k} | {100 * own:.1f}% | {100 * before:.1f}% | {1e3 * m:.0f} | "
                          f"{1e3 * p:.0f} | {100 * (p / m - 1):+.1f}% |" + ("" if counts else " (does not count)"))
    print(f"\nLaunches that count: {counted}. Rule: a row needs three; call 14's rows stay.\n")

    # Machine 3 is call 21's (reports/validation/optimizer_probe/): its two launches of the 2-GPU
    # configuration (no trace) ran before this call's third try, whose calibration they are costed on.
    print("## Machine 3: call 21's launches on this machine's calibration (cal:1 2.8%, ob2:1 3.4%)\n")
    print("| launch | its steal | measured (ms) | predicted (ms) | error |\n|---|---|---|---|---|")
    probe = path("reports/validation/optimizer_probe")
    with tempfile.TemporaryDirectory() as scratch:
        for k in (1, 2):
            run_dir = os.path.join(probe, f"optcheck_{k}")
            run = json.load(open(os.path.join(run_dir, "probe_fsdp2-offload_L24-h1024_mb4x2.json")))
            bench = [path(HERE, "machine3", "ob_1", "torch_offload_bench_r2.json"), path(CALL14, "ob", "torch_offload_bench_r4.json")]
            p = predicted(run_dir, run, bench, [path(HERE, "machine3", "hd_1")], scratch)
            m = run["measured"]["step_time_s"]
            print(f"| {k} | {100 * run['provenance']['cpu_steal_fraction']:.1f}% | {1e3 * m:.0f} | {1e3 * p:.0f} | {100 * (p / m - 1):+.1f}% |")
    print()

    print("## Fused CPU AdamW: the bench per tensor size (ms a tensor) and the rows' profiled steps\n")
    benches = [("call 14", path(CALL14, "ob", "torch_offload_bench_r{}.json")),
               ("call 19 machine 1, ob_1", path(HERE, "machine1", "ob_1", "torch_offload_bench_r{}.json")),
               ("call 19 machine 1, ob_2", path(HERE, "machine1", "ob_2", "torch_offload_bench_r{}.json")),
               ("call 19 machine 2, ob_1", path(HERE, "machine2", "ob_1", "torch_offload_bench_r{}.json"))]
    print("| bench | ranks | 1024 | 65536 | 262144 | 4194304 elements |")
    print("|---|---|---|---|---|---|")
    for name, pattern in benches:
        for r in (2, 4):
            if os.path.exists(pattern.format(r)):
                t = per_tensor_ms(pattern.format(r))
                print(f"| {name} | {r} | " + " | ".join(f"{v:.3f}" for v in t.values()) + " |")
    print("\n| rows' profiled step | fused AdamW on rank 0 (ms) |\n|---|---|")
    for name, trace in [("call 14, 2 GPUs (median launch)", path(ROWS14, "h200x2_fsdp2-offload_L24-h1024_mb4x2.trace.json.gz")),
                        ("call 14, 4 GPUs (median launch)", path(ROWS14, "h200x4_fsdp2-offload_L24-h1024_mb4x2.trace.json.gz")),
                        ("call 19 machine 1, 2 GPUs, launch 1", path(HERE, "machine1", "g2_1", "h200x2_fsdp2-offload_L24-h1024_mb4x2.trace.json.gz")),
                        ("call 19 machine 1, 4 GPUs, launch 1", path(HERE, "machine1", "g4_1", "h200x4_fsdp2-offload_L24-h1024_mb4x2.trace.json.gz"))]:
        print(f"| {name} | {adamw_ms(trace):.0f} |")


if __name__ == "__main__":
    main()
