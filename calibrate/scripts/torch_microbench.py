#!/usr/bin/env python3
"""PyTorch-side calibration: the kernels and host costs of PyTorch's own eager stacks.

trainsim-calibrate measures cuBLASLt, NCCL and raw CUDA launches in C++. What PyTorch adds on top
(its own elementwise, norm, attention and optimizer kernels; its dispatcher's host time per
operator and per module hook; its CPU AdamW) is measured here, with PyTorch, on the same machine:

  python3 calibrate/scripts/torch_microbench.py --out DIR [--parts kernels,attention,host,cpu_adam,fsdp_kernels]

writes DIR/torch_microbench.json (schema_version 1; every figure is the median of repeated samples
after warm-up, with its min and max). calibrate/scripts/merge_torch_calibration.py turns it into
profile sections. Byte counts (bytes read + written by the kernel, the convention of
trainsim-calibrate's kernel part) are stated per kernel below.

The measurements themselves live in the framework driver of trainsim-calibrate
(calibrate/framework/), which `trainsim-calibrate --full` runs and whose profile writer merges them;
this script runs them alone, writing the layout the committed raw runs of
reports/calibration/ have.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.timing import BF16, FP32, cuda_time, provenance, stats  # noqa: E402,F401 (used by other scripts)
from framework.torch_attention import attention  # noqa: E402
from framework.torch_host import cpu_adam, host  # noqa: E402
from framework.torch_kernels import fsdp_kernels, kernels  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="kernels,attention,host,cpu_adam")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    doc = {"schema_version": 1, "kind": "trainsim.torch_microbench",
           "provenance": provenance("calibrate/scripts/torch_microbench.py", dev, cpu_count=os.cpu_count()),
           "errors": {}}
    for part in args.parts.split(","):
        t0 = time.time()
        try:
            doc[part] = {"kernels": kernels, "attention": attention, "host": host, "fsdp_kernels": fsdp_kernels,
                         "cpu_adam": cpu_adam}[part](dev)
        except Exception as e:  # noqa: BLE001 - keep the other parts
            doc["errors"][part] = f"{type(e).__name__}: {e}"
        doc.setdefault("seconds", {})[part] = time.time() - t0
        print(f"[torch_microbench] {part}: {time.time() - t0:.1f} s", flush=True)
        with open(os.path.join(args.out, "torch_microbench.json"), "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
