#!/usr/bin/env python3
"""A profile for measured runs: a built-in profile's GPU side (GEMMs, kernels, attention, collectives) with its
PyTorch host figures replaced by another host's, to cost measured runs with the host figures of the
host they ran on (each measured folder's host.profile.json under reports/validation/measured/; the raw
host calibrations behind them left the tree: reports/HISTORY.md):

    python3 calibrate/scripts/host_swap_profile.py --base h200x4-measured --name NAME --description "..." \\
        --stacks DIR/torch_stack_dispatch_w{1,2}.json \\
        --micro DIR/torch_microbench.json \\
        --offload DIR/torch_offload_bench_r{2,4}.json --out /tmp/p.json

--stacks: torch_stack_dispatch files, several launches of one world size combined (median of the
launches' medians, merge_torch_calibration.py); --pipeline-actions: the pipelines' measured forward
share; --offload: torch_offload_bench files whose rank counts replace the base's (the base keeps the
rank counts not given). Without --offload the base's offload curves stay.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="a built-in profile's name (hwprofiles/NAME.json)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--description", required=True, help="what the profile is: whose GPU side, whose host figures")
    ap.add_argument("--stacks", nargs="+", required=True)
    ap.add_argument("--micro", required=True)
    ap.add_argument("--pipeline-actions")
    ap.add_argument("--offload", nargs="*", default=[])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    p = json.load(open(os.path.join(ROOT, "hwprofiles", a.base + ".json")))
    hd = p["calibration"]["host_dispatch"]
    p["calibration"]["host_dispatch"] = {k: hd[k] for k in ("kernel_launch_us", "gpu_kernel_us") if k in hd}
    del p["provenance"]["torch_calibration"]
    p["name"] = a.name
    p["description"] = a.description
    with tempfile.TemporaryDirectory() as tmp:
        base, mid = os.path.join(tmp, "base.json"), os.path.join(tmp, "mid.json")
        with open(base, "w") as f:
            f.write(json.dumps(p, indent=2) + "\n")
        cmd = [sys.executable, os.path.join(HERE, "merge_torch_calibration.py"), "--profile", base, "--micro", a.micro,
               "--stacks", *a.stacks, "--raw", " ".join(a.stacks), "--out", mid if a.offload else a.out]
        if a.pipeline_actions:
            cmd += ["--pipeline-actions", a.pipeline_actions]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        if a.offload:
            given = {json.load(open(f))["ranks"] for f in a.offload}
            kept = [f for f in (os.path.join(ROOT, "reports", "calibration", "offload", "h200x4", f"torch_offload_bench_r{r}.json")
                                for r in (1, 2, 4) if r not in given) if os.path.exists(f)]
            m = json.load(open(mid))
            del m["calibration"]["torch_offload"]
            with open(mid, "w") as f:
                f.write(json.dumps(m, indent=2) + "\n")
            subprocess.run([sys.executable, os.path.join(HERE, "merge_offload_calibration.py"), "--profile", mid,
                            "--bench", *kept, *a.offload, "--out", a.out], check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
