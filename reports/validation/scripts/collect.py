#!/usr/bin/env python3
"""Copy the runs of unpacked device results into reports/validation/measured/ and print the table.

    python3 collect.py --call call1 /tmp/r1 --call call2 /tmp/r2 --call call3 /tmp/r3
    python3 collect.py --table            (only the markdown table of what measured/ holds)

Each results folder is an unpacked results.tgz of device_call.sh: env.txt, log-*.txt and one folder
per phase (g1, g2, g4, g2e, g4e; smoke is left out: a tiny model that only exercises the code paths).
Runs go to measured/<gpu>x<n>/ (NAME.json, NAME.model.json, NAME.trace.json.gz), failure records to
measured/failed/, logs and plans to measured/logs/<call>/.
"""
import argparse
import glob
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
MEASURED = os.path.join(os.path.dirname(HERE), "measured")


def copy_call(call, root):
    logs = os.path.join(MEASURED, "logs", call)
    os.makedirs(logs, exist_ok=True)
    for f in glob.glob(os.path.join(root, "*.txt")):
        shutil.copy(f, logs)
    for phase in sorted(os.listdir(root)):
        src = os.path.join(root, phase)
        if not os.path.isdir(src) or phase == "smoke":
            continue
        shutil.copy(os.path.join(src, "plan.json"), os.path.join(logs, f"plan-{phase}.json"))
        for f in sorted(os.listdir(src)):
            if f.endswith(".started") or f == "plan.json":
                continue
            if ".failed." in f:
                dst = os.path.join(MEASURED, "failed")
            else:
                dst = os.path.join(MEASURED, f.split("_")[0])
            os.makedirs(dst, exist_ok=True)
            shutil.copy(os.path.join(src, f), dst)


def gib(x):
    return f"{x / 2**30:.1f}"


def table():
    rows = []
    for f in sorted(glob.glob(os.path.join(MEASURED, "*", "*.json"))):
        if f.endswith(".model.json") or os.sep + "failed" + os.sep in f or os.sep + "logs" + os.sep in f:
            continue
        d = json.load(open(f))
        m, st, det = d["measured"], d["strategy"], d["stack"]["details"]
        work = (f"{st['micro_batch']} x {st['global_batch'] // st['micro_batch']} mb" if st["pp"] > 1 else
                f"{st['micro_batch']} x {det.get('grad_accum', 1)} x dp {st['dp']}")
        rows.append((st["gpus"], d["name"], d["provenance"]["gpu"], det["run_step_stack"],
                     f"{det['params_total'] / 1e9:.2f}", work, f"{m['step_time_s']:.4f}",
                     f"{m['step_time_spread']:.3f}", f"{m['tokens_per_s']:.0f}",
                     " / ".join(gib(x) for x in m["peak_allocated_bytes"]),
                     " / ".join(gib(x) for x in m["peak_reserved_bytes"])))
    rows.sort(key=lambda r: (r[0], r[1]))
    print("| run | GPUs that came | stack | params (B) | micro-batch x count | step (s, median) | spread "
          "| tokens/s | peak allocated GiB (per rank) | peak reserved GiB (per rank) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[1]} | {r[0]} x {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} | {r[7]} | {r[8]} | {r[9]} | {r[10]} |")
    fails = sorted(glob.glob(os.path.join(MEASURED, "failed", "*.json")))
    if fails:
        print()
        print("| configuration | rank | reason | error |")
        print("|---|---|---|---|")
        for f in fails:
            d = json.load(open(f))
            if d["reason"] == "error" and "OutOfMemoryError" in d.get("traceback", ""):
                d["reason"] = "oom (inside pipelining's RuntimeError)"
            err = d["error"].replace("\n", " ").replace("|", "/")
            err = " ".join(err.split())[:160]
            print(f"| {d['name']} | {d['rank']} | {d['reason']} | {err} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--call", nargs=2, action="append", metavar=("NAME", "DIR"), default=[])
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    for call, root in args.call:
        copy_call(call, root)
    table()


if __name__ == "__main__":
    main()
