#!/usr/bin/env python3
"""GEMM rates and flash attention as a training step runs them, alone (maintainers' tool).

The measurement is trainsim-calibrate's framework part torch_step_gemms
(calibrate/framework/torch_steps.py: what it runs and why), which `trainsim-calibrate --full` runs and
whose profile writer puts it into the profile as calibration.gemm_in_step and calibration.attention.
This script runs it alone on GPU 0, writing the layout of the committed raw runs
(reports/calibration/step-gemms/, reports/calibration/step-attention/):

    python3 calibrate/scripts/torch_step_gemms.py --out DIR [--quick]

writes DIR/torch_step_gemms.json (schema_version 1).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.timing import provenance  # noqa: E402
from framework.torch_steps import ARCHS, MICRO_BATCHES, one_config  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="the GPT at hidden 1024 and Llama 3 8B's layer, 2048 tokens")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    doc = {"schema_version": 1, "kind": "trainsim.torch_step_gemms",
           "provenance": provenance("calibrate/scripts/torch_step_gemms.py", dev),
           "configs": [], "errors": []}
    grid = [(a, b) for a in ARCHS for b in MICRO_BATCHES]
    if args.quick:
        grid = [(a, 1) for a in ARCHS if a[1] == 1024 or a[0] == "llama"][:2]
    with tempfile.TemporaryDirectory() as tmp:
        for a, b in grid:
            t0 = time.time()
            try:
                doc["configs"].append(one_config(*a, b, dev, tmp))
            except Exception as e:  # noqa: BLE001 - keep the other configurations
                doc["errors"].append({"config": list(a) + [b], "error": f"{type(e).__name__}: {e}"})
                torch.cuda.empty_cache()
            print(f"[torch_step_gemms] {a[0]} h{a[1]} b{b}: {time.time() - t0:.1f} s", flush=True)
            with open(os.path.join(args.out, "torch_step_gemms.json"), "w") as f:
                json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
