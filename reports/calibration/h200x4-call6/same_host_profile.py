#!/usr/bin/env python3
"""The same-host experiment of call 6: h200x4-measured with its PyTorch host figures replaced by the
ones measured on the host that ran call 6's launches (hd/: host dispatch per stack, ob/: FSDP2
offload copies and CPU AdamW at 2 and 4 ranks; the 1-rank offload curves stay h200x4-measured's,
call 6 measured none). Everything else (GEMMs, kernels, attention, collectives) is h200x4-measured's.

    python3 reports/calibration/h200x4-call6/same_host_profile.py --out /tmp/h200x4-call6.json
    build/trainsim validate --measured reports/validation/measured --no-trace --hw /tmp/h200x4-call6.json

Writes a scratch profile, not a built-in one: README.md says what it gave and why it is not used.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SCRIPTS = os.path.join(ROOT, "calibrate", "scripts")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    p = json.load(open(os.path.join(ROOT, "hwprofiles", "h200x4-measured.json")))
    hd = p["calibration"]["host_dispatch"]
    p["calibration"]["host_dispatch"] = {k: hd[k] for k in ("kernel_launch_us", "gpu_kernel_us") if k in hd}
    del p["calibration"]["torch_offload"]
    del p["provenance"]["torch_calibration"]
    p["name"] = "h200x4-call6"
    with tempfile.TemporaryDirectory() as tmp:
        base, mid = os.path.join(tmp, "base.json"), os.path.join(tmp, "mid.json")
        with open(base, "w") as f:
            f.write(json.dumps(p, indent=2) + "\n")
        subprocess.run([sys.executable, os.path.join(SCRIPTS, "merge_torch_calibration.py"), "--profile", base,
                        "--micro", os.path.join(HERE, "hd", "torch_microbench.json"), "--stacks",
                        os.path.join(HERE, "hd", "torch_stack_dispatch_w1.json"),
                        os.path.join(HERE, "hd", "torch_stack_dispatch_w2.json"),
                        "--raw", "reports/calibration/h200x4-call6/hd/", "--out", mid], check=True)
        subprocess.run([sys.executable, os.path.join(SCRIPTS, "merge_offload_calibration.py"), "--profile", mid, "--bench",
                        os.path.join(ROOT, "reports", "calibration", "offload", "h200x4", "torch_offload_bench_r1.json"),
                        os.path.join(HERE, "ob", "torch_offload_bench_r2.json"),
                        os.path.join(HERE, "ob", "torch_offload_bench_r4.json"), "--out", a.out], check=True)


if __name__ == "__main__":
    main()
