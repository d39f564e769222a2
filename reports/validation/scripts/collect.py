#!/usr/bin/env python3
"""Copy the runs of unpacked device results into reports/validation/measured/ and print the table.

    python3 collect.py --call first /tmp/r1 --call second /tmp/r2 --call third /tmp/r3
    python3 collect.py --table            (only the markdown table of what measured/ holds)
    python3 collect.py --launches samehost-h200x4 /tmp/r6  (run_rows_same_host.sh's results)
    python3 collect.py --launches hostcal-h200x2 /tmp/r7 --into reports/validation/measured/hostcal-h200x2 \
        --profile /tmp/h200x2-hostcal.profile.json         (run_rows_with_host_calibration.sh's, with its host's profile)

Each results folder is an unpacked results.tgz of run_rows.sh: env.txt, log-*.txt and one folder
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


def median_launch(runs):
    """The launch whose step time is the median of an odd number of launches."""
    order = sorted(runs, key=lambda kr: kr[1]["measured"]["step_time_s"])
    return order[len(order) // 2]


def copy_launches(call, root, into=None, profile=None, suffix=""):
    """run_rows_same_host.sh, run_rows_with_host_calibration.sh: every configuration ran in several launches
    (folders g<n>_<k>, each launch a fresh process group). The row committed is the launch with the
    median step time, whole (its peaks, bubble and trace belong to that step), with measured.launches
    listing every launch's step time; every launch's JSON goes to repeats/<call>/launch<k>/ (no
    traces), logs to measured/logs/<call>/. Rows go to measured/<gpu>x<n>/, or all to `into`; with
    `profile` (the calibration of the host they ran on) a copy of it goes beside them and each row
    names it ("profile"), so that trainsim validate costs them there. A `suffix` is appended to each
    row's name (and its files' and the names inside it that refer to them), for configurations measured
    again on another host as rows of their own (the second hosts' rows: "_host2")."""
    logs = os.path.join(MEASURED, "logs", call)
    os.makedirs(logs, exist_ok=True)
    for f in glob.glob(os.path.join(root, "*.txt")):
        shutil.copy(f, logs)
    runs = {}
    for src in sorted(glob.glob(os.path.join(root, "g*_*"))):
        phase = os.path.basename(src)
        launch = int(phase.split("_")[1])
        shutil.copy(os.path.join(src, "plan.json"), os.path.join(logs, f"plan-{phase}.json"))
        rep = os.path.join(os.path.dirname(MEASURED), "repeats", call, f"launch{launch}")
        os.makedirs(rep, exist_ok=True)
        for f in sorted(glob.glob(os.path.join(src, "*.json"))):
            name = os.path.basename(f)[:-len(".json")]
            if name == "plan" or name.endswith(".model") or ".failed." in name:
                continue
            shutil.copy(f, rep)
            runs.setdefault(name, []).append((launch, json.load(open(f)), src))
    if into and profile:
        os.makedirs(into, exist_ok=True)
        shutil.copy(profile, os.path.join(into, os.path.basename(profile)))
    for name, rs in sorted(runs.items()):
        if len(rs) % 2 == 0:
            raise SystemExit(f"{name}: {len(rs)} launches; the median launch needs an odd count")
        launch, row, src = median_launch(rs)
        if into and profile:
            keys = list(row)
            row["profile"] = os.path.basename(profile)
            row = {k: row[k] for k in keys[:keys.index("model") + 1] + ["profile"] + keys[keys.index("model") + 1:]}
        m = row["measured"]
        if suffix:
            row["name"] += suffix
            row["model"] = row["name"] + ".model.json"
            if "trace" in m:
                m["trace"] = row["name"] + ".trace.json.gz"
        m["launches"] = []
        for k, r, _ in sorted(rs, key=lambda x: x[0]):
            e = {"launch": k, "step_time_s": r["measured"]["step_time_s"],
                 "step_time_spread": r["measured"]["step_time_spread"], "date": r["provenance"]["date"]}
            if "bubble_fraction" in r["measured"].get("busy", {}):
                e["bubble_fraction"] = r["measured"]["busy"]["bubble_fraction"]
            if "cpu_steal_fraction" in r["provenance"]:  # rows run_step.py measured before it recorded it hold none
                e["cpu_steal_fraction"] = r["provenance"]["cpu_steal_fraction"]
            m["launches"].append(e)
        dst = into or os.path.join(MEASURED, name.split("_")[0])
        os.makedirs(dst, exist_ok=True)
        with open(os.path.join(dst, f"{row['name']}.json"), "w") as f:
            json.dump(row, f, indent=1)
            f.write("\n")
        for ext in (".model.json", ".trace.json.gz"):
            shutil.copy(os.path.join(src, name + ext), os.path.join(dst, row["name"] + ext))
        times = ", ".join(f"{r['measured']['step_time_s']:.4f}" for _, r, _ in sorted(rs, key=lambda x: x[0]))
        print(f"{name}: launch {launch} of {len(rs)} ({times} s)")


def gib(x):
    return f"{x / 2**30:.1f}"


def table():
    rows = []
    for f in sorted(glob.glob(os.path.join(MEASURED, "*", "*.json"))):
        if f.endswith(".model.json") or os.sep + "failed" + os.sep in f or os.sep + "logs" + os.sep in f:
            continue
        d = json.load(open(f))
        if d.get("kind") != "trainsim.measured_run":  # a profile beside the runs
            continue
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
    ap.add_argument("--launches", nargs=2, action="append", metavar=("NAME", "DIR"), default=[])
    ap.add_argument("--into", help="with --launches: every row into this folder (instead of measured/<gpu>x<n>/)")
    ap.add_argument("--profile", help="with --into: the profile of the host the rows ran on, copied beside them")
    ap.add_argument("--suffix", default="", help="with --launches: appended to every row's name")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    for call, root in args.call:
        copy_call(call, root)
    for call, root in args.launches:
        copy_launches(call, root, args.into, args.profile, args.suffix)
    table()


if __name__ == "__main__":
    main()
