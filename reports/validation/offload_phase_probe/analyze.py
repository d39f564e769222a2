#!/usr/bin/env python3
"""Validation calls 23-25: where the 2-GPU FSDP2 CPU-offload step goes, and why its accumulating
copies are slow (reports/validation/README.md, rows "23"-"25", have the questions and rules, written
before each call; README.md here reads the tables).

    python3 reports/validation/offload_phase_probe/analyze.py      (needs build/trainsim)

Prints (1) each launch's step, its accumulating micro-batch's blocking copies (time, page faults
against the pages they fill), CPU adds and stream waits; (2) per copy size, the faults and rate where
the launch recorded each copy; (3) the replay on the quiet hosts' own calibration against their
launches, as committed (copies below glibc's 32 MiB mmap threshold into resident pages, as the bench
measures them) and with those copies' pages faulting in at the cost the same curve shows above the
threshold (trainsim validate's second prediction for such runs); (4) the same two of the committed
offload rows.
"""
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
TRAINSIM = os.path.join(ROOT, "build", "trainsim")
GLIBC_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
PAGE = 4096
COPY = "to@cuda blocking_d2h"
LAUNCHES = [("23", "machine1/phase_1", "plain"), ("23", "machine1/phasesplit_1", "split"),
            ("24", "call24/phasesplit_2", "split"), ("24", "call24/phasesplitglibc_2", "split, glibc trim and mmap threshold fixed"),
            ("25", "call25/phasesplit_3", "split"), ("25", "call25/phasesplitarena_3", "split, MALLOC_ARENA_MAX=1"),
            ("25", "call25/phasesplitprof_3", "split, rank 0 under torch.profiler"),
            ("25", "call25/phasesplitbig_3", "split, 2.65 B GPT"),
            ("28", "call28/phasesplit_5", "split"), ("28", "call28/phasesplitbig_5", "split, 2.65 B GPT"),
            ("26", "call26/phasesplit4_4", "split, 4 ranks"), ("26", "call26/phasesplitbig4_4", "split, 4 ranks, 2.65 B GPT")]


def probe(launch, rank):
    # Committed gzipped (the probes' per-call records are about 1.3 MB a rank as written).
    return json.load(gzip.open(os.path.join(HERE, launch, f"offload_phase_probe_rank{rank}.json.gz")))


def reduce_calls(step, micro_batch):
    return [s for s in step["spans"] if s[0] == "foreach_reduce" and s[4] == micro_batch and s[5]]


def split_median(doc, key, index):
    """Median over the timed steps of the accumulating micro-batch's summed split entry; None where
    the launch did not record it (call 23's entries are [calls, seconds] only)."""
    entries = [s[5].get(key, [0] * 5) for st in doc["steps"] for s in reduce_calls(st, 1)]
    if any(len(e) <= index for e in entries):
        return None
    return statistics.median(sum(s[5].get(key, [0] * 5)[index] for s in reduce_calls(st, 1)) for st in doc["steps"])


def launch_ranks():
    """(call, launch folder and what it ran, rank, the rank's probe record) of every launch; rank 0
    and 1 (the 4-rank launches' ranks 2 and 3 are left out, as in every table)."""
    for call, launch, what in LAUNCHES:
        for rank in (0, 1):
            yield call, f"{launch} ({what})", rank, probe(launch, rank)


def launches_table():
    print("| call | launch | rank | steal | step (ms) | accumulating foreach_reduce (ms) | its blocking copies (ms) | "
          "their faults / pages | its CPU adds (ms) | stream waits before the copies (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for call, launch, rank, d in launch_ranks():
        reduce_ms = 1e3 * d["summary"]["foreach_reduce mb1"]["median_s"]
        row = f"| {call} | {launch} | {rank} | {100 * d['cpu_steal_fraction']:.1f}% | {1e3 * d['step_s_median']:.0f} | {reduce_ms:.0f} |"
        if d["split"]:
            faults, nbytes = split_median(d, COPY, 2), split_median(d, COPY, 3)
            said = "not recorded" if faults is None else f"{faults:.0f} / {nbytes / PAGE:.0f} ({faults * PAGE / nbytes:.3f})"
            row += (f" {1e3 * split_median(d, COPY, 1):.0f} | {said} | {1e3 * split_median(d, 'add_@cpu', 1):.0f} | "
                    f"{1e3 * split_median(d, 'wait_before_blocking_d2h', 1):.0f} |")
        else:
            row += " - | - | - | - |"
        print(row)


def chunk_kind(flags):
    """glibc's chunk flags (offload_phase_probe.py, glibc_chunk): IS_MMAPPED 2, NON_MAIN_ARENA 4."""
    return "mmapped" if flags & 2 else "per-thread arena heap" if flags & 4 else "main arena"


def sizes_table():
    print("\n| call | launch | rank | copy size (MB) | copies | faults / pages | rate (GB/s) | destination addresses | "
          "glibc chunks (call 28 on) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for call, launch, rank, d in launch_ranks():
        by = {}
        for st in d["steps"]:
            for s in reduce_calls(st, 1):
                for nbytes, faults, seconds, address, *chunk in s[5].get("blocking_copies", []):
                    if nbytes >= 1 << 20:
                        n, f, sec, addrs, kinds = by.get(nbytes, (0, 0, 0.0, set(), {}))
                        kind = chunk_kind(chunk[0]) if chunk else "not recorded"
                        by[nbytes] = (n + 1, f + faults, sec + seconds, addrs | {address}, {**kinds, kind: kinds.get(kind, 0) + 1})
        for nbytes, (n, f, sec, addrs, kinds) in sorted(by.items()):
            said = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
            print(f"| {call} | {launch} | {rank} | {nbytes / 1e6:.1f} | {n} | {f / (n * nbytes / PAGE):.2f} | "
                  f"{n * nbytes / sec / 1e9:.1f} | {len(addrs)} | {said} |")


def both(run_path, profile_path):
    """The replay's step time of a measured run on the given profile, as trainsim validate costs it,
    with FSDP2's accumulating copies into resident pages (the replay) and faulting in every page
    (its second prediction, summary.json's predicted_with_pages_faulting)."""
    out = subprocess.run([TRAINSIM, "validate", "--measured", run_path, "--hw", profile_path, "--no-trace", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    row = next(r for r in json.loads(out)["rows"] if r["metric"] == "step_time")
    return row["predicted"], row["predicted_with_pages_faulting"]


def profile_of_host(scratch, name, args):
    path = os.path.join(scratch, name + ".profile.json")
    subprocess.run([sys.executable, *args, "--out", path], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return path


def replay_tables():
    # The quiet hosts ran the configuration of this row (its measured-run JSON names the model and strategy).
    row = os.path.join(ROOT, "reports/validation/measured/call14-h200x4/h200x2_fsdp2-offload_L24-h1024_mb4x2.json")
    with tempfile.TemporaryDirectory() as scratch:
        m3 = "reports/calibration/h200x4-call19/machine3"
        call21_host = profile_of_host(scratch, "call21-host", [
            "calibrate/scripts/host_swap_profile.py", "--base", "h200x4-measured", "--name", "call21-host", "--description",
            "call 21's host (call 19, machine 3)", "--stacks", f"{m3}/hd_1/torch_stack_dispatch_w2.json",
            "--micro", "reports/calibration/h200x4-call6/hd/torch_microbench.json",
            "--offload", f"{m3}/ob_1/torch_offload_bench_r2.json"])
        call24_host = profile_of_host(scratch, "call24-host", [
            "calibrate/scripts/merge_offload_calibration.py", "--profile", "hwprofiles/h200x2-measured.json",
            "--bench", "reports/validation/offload_phase_probe/call24/ob_2/torch_offload_bench_r2.json"])
        opt = os.path.join(ROOT, "reports/validation/optimizer_probe")
        quiet = [("call 21's host (4 x H200, steal 1.1% and 0.4%)", call21_host,
                  [json.load(open(os.path.join(opt, d, "probe_fsdp2-offload_L24-h1024_mb4x2.json")))["measured"]["step_time_s"]
                   for d in ("optcheck_1", "optcheck_2")]),
                 ("call 24's host (2 x H200, steal 3.8%; the split probe's launch)", call24_host,
                  [probe("call24/phasesplit_2", 0)["step_s_median"]])]
        print("\n| host | measured step (ms) | replay as committed (ms) | replay, accumulating copies' pages faulting (ms) |")
        print("|---|---|---|---|")
        for name, prof, measured in quiet:
            resident, fresh = both(row, prof)
            ms = ", ".join(f"{1e3 * x:.0f}" for x in measured)
            errs = lambda p: ", ".join(f"{100 * (p / x - 1):+.1f}%" for x in measured)  # noqa: E731
            print(f"| {name} | {ms} | {1e3 * resident:.0f} ({errs(resident)}) | {1e3 * fresh:.0f} ({errs(fresh)}) |")
        print("\n| committed row | measured (ms) | replay as committed | replay, pages faulting |")
        print("|---|---|---|---|")
        for rel in ("call14-h200x4/h200x2_fsdp2-offload_L24-h1024_mb4x2.json", "call14-h200x4/h200x4_fsdp2-offload_L24-h1024_mb4x2.json",
                    "h200x2/h200x2_fsdp2-offload_L32-h2560_mb1x2.json", "h200x4/h200x4_fsdp2-offload_L32-h2560_mb1x2.json"):
            path = os.path.join(ROOT, "reports/validation/measured", rel)
            r = json.load(open(path))
            # As trainsim validate picks it: the profile the run names, else the built-in h200x4-measured
            # (planner/cli/cmd_validate.cpp: the calibrated profile of the H200).
            prof = (os.path.join(os.path.dirname(path), r["profile"]) if "profile" in r else
                    os.path.join(ROOT, "hwprofiles", "h200x4-measured.json"))
            resident, fresh = both(path, prof)
            m = r["measured"]["step_time_s"]
            print(f"| {r['name']} | {1e3 * m:.0f} | {1e3 * resident:.0f} ({100 * (resident / m - 1):+.1f}%) | "
                  f"{1e3 * fresh:.0f} ({100 * (fresh / m - 1):+.1f}%) |")


def main():
    launches_table()
    sizes_table()
    replay_tables()


if __name__ == "__main__":
    main()
