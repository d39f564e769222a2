#!/usr/bin/env python3
"""How call 13's four rows move when their host figures move: the rows and their profile are copied
to a scratch folder, every pipeline host figure of the profile (per layer and per micro-batch, both
passes) is multiplied by each factor, and `trainsim validate` costs the copies. Read by nothing; it
shows how host-bound the replay of these rows is, and whether one host figure could fit all four
(reports/calibration/h200x4-call13/README.md). From the repository root, after building:

    python3 reports/calibration/h200x4-call13/host_sensitivity.py [--factors 1.0 1.1 1.2 1.3]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
ROWS = os.path.join(ROOT, "reports", "validation", "measured", "call13-h200x4")
PROFILE = "h200x4-call13.profile.json"
SCALED = ("layer_forward_us", "layer_backward_us", "micro_batch_forward_us", "micro_batch_backward_us")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--factors", type=float, nargs="+", default=[1.0, 1.1, 1.2, 1.3])
    ap.add_argument("--trainsim", default=os.path.join(ROOT, "build", "trainsim"))
    a = ap.parse_args()
    print("| host factor | row | predicted step | error | predicted bubble | error |")
    print("|---|---|---|---|---|---|")
    for f in a.factors:
        with tempfile.TemporaryDirectory() as tmp:
            for src in glob.glob(os.path.join(ROWS, "*.json")):
                shutil.copy(src, tmp)
            p = os.path.join(tmp, PROFILE)
            prof = json.load(open(p))
            for s in prof["calibration"]["host_dispatch"]["stacks"]:
                for k in SCALED:
                    s[k] *= f
            json.dump(prof, open(p, "w"), indent=2)
            for run in glob.glob(os.path.join(tmp, "h200x4_pipe-*.json")):
                if run.endswith(".model.json"):
                    continue
                j = json.load(open(run))
                j["measured"]["trace"] = None  # the traces stay behind: validate compares without them
                json.dump(j, open(run, "w"))
            out = os.path.join(tmp, "summary.json")
            subprocess.run([a.trainsim, "validate", "--measured", tmp, "--no-trace", "--format", "json", "-o", out],
                           check=True, stdout=subprocess.DEVNULL)
            rows = json.load(open(out))["rows"]
        for r in rows:
            if r["metric"] == "step_time":
                b = next(x for x in rows if x["name"] == r["name"] and x["metric"] == "bubble_fraction")
                print(f"| {f:.2f} | {r['name']} | {r['predicted'] * 1e3:.1f} ms | {r['error_pct']:+.1f}% | "
                      f"{b['predicted']:.3f} | {b['error_abs']:+.3f} |")


if __name__ == "__main__":
    main()
