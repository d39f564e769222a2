#!/usr/bin/env python3
"""The calibration tables merged into the committed profiles regenerate from their committed raw runs.

calibration.gemm_in_step (calibrate/scripts/merge_step_gemms.py, from the in-step GEMM runs on four
H200s) and calibration.attention (calibrate/scripts/merge_layer_attention.py, from the in-step flash
attention runs on two H200s and, for the sequence lengths those did not run, the layer-kernel run)
are merged into h200x4-measured and the seven profiles of the measured rows' hosts beside their runs. Both scripts replace their
section, so running them again over a copy of each committed profile must give it back byte for
byte: a hand edit, or a profile merged from other runs than the committed ones, fails here.

    python3 tests/python/profile_tables_regenerate.py SOURCE_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

STEP_RUNS = "reports/calibration/step-gemms/"
ATTENTION_RUNS = "reports/calibration/step-attention/"
LAYER_RUN = "reports/calibration/layer-kernels/torch_layer_kernels.json"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    os.chdir(root)
    profiles = ["hwprofiles/h200x4-measured.json"] + sorted(glob.glob("reports/validation/measured/*/host.profile.json"))
    if len(profiles) != 8:
        sys.exit(f"expected h200x4-measured and seven host profiles, found {profiles}")
    runs = [f"{STEP_RUNS}gpu{g}/torch_step_gemms.json" for g in range(4)]
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for i, p in enumerate(profiles):
            c = os.path.join(tmp, f"{i}.json")
            shutil.copyfile(p, c)
            copies.append(c)
        scripts = os.path.join(root, "calibrate", "scripts")
        subprocess.run([sys.executable, os.path.join(scripts, "merge_step_gemms.py"), "--gemms", *runs, "--raw", STEP_RUNS,
                        *copies], check=True, stdout=subprocess.DEVNULL)
        for p, c in zip(profiles, copies):
            source = json.load(open(p))["calibration"]["attention"]["source"]
            subprocess.run([sys.executable, os.path.join(scripts, "merge_layer_attention.py"), "--step-runs",
                            *(f"{ATTENTION_RUNS}gpu{g}/torch_step_gemms.json" for g in range(2)), "--micro", LAYER_RUN,
                            "--source", source, c], check=True, stdout=subprocess.DEVNULL)
            if open(c, "rb").read() != open(p, "rb").read():
                failed.append(p)
    if failed:
        sys.exit("these profiles do not regenerate from the committed runs (merge_step_gemms.py, "
                 f"merge_layer_attention.py): {failed}")
    print(f"{len(profiles)} profiles regenerate byte for byte")


if __name__ == "__main__":
    main()
