#!/usr/bin/env python3
"""FSDP2 CPU offload's host copies and CPU AdamW, N ranks at once (maintainers' tool).

The measurements are trainsim-calibrate's framework part torch_offload
(calibrate/framework/torch_offload.py: what each part times and why), which `trainsim-calibrate --full`
runs on one rank and whose profile writer puts them into the profile as calibration.torch_offload.
This script runs them under torchrun, every rank of the group at once (what one GPU cannot measure),
writing the layout of the committed raw runs (reports/calibration/offload/):

  torchrun --standalone --nproc-per-node N calibrate/scripts/torch_offload_bench.py --out FILE
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.torch_offload import adam, adam_model, copies, synchronized_rounds  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--parts", nargs="+", choices=["copies", "adam", "rounds", "autograd_rounds", "adam_model"],
                    default=["copies", "adam", "rounds", "autograd_rounds"])
    ap.add_argument("--model-layers", type=int, default=24, help="adam_model: the GPT's layers (the small rows')")
    ap.add_argument("--model-hidden", type=int, default=1024, help="adam_model: the GPT's hidden size")
    args = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", 0))
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", 1)))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    nccl = dist.new_group(backend="nccl") if {"rounds", "autograd_rounds"} & set(args.parts) else None
    cores = os.cpu_count() or 1
    torch.set_num_threads(max(1, cores // ranks))  # as reports/validation/scripts/run_step.py
    doc = {"schema_version": 1, "kind": "trainsim.torch_offload_bench",
           "provenance": {"script": "calibrate/scripts/torch_offload_bench.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "cuda": torch.version.cuda,
                          "cpu_count": cores, "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")},
           "ranks": ranks, "threads_per_rank": torch.get_num_threads(), "seconds": {}}
    parts = {"copies": lambda: copies(dev, args.samples), "adam": lambda: adam(args.samples),
             "rounds": lambda: synchronized_rounds(dev, args.samples, nccl, in_backward=False),
             "autograd_rounds": lambda: synchronized_rounds(dev, args.samples, nccl, in_backward=True),
             "adam_model": lambda: adam_model(args.samples, ranks, args.model_layers, args.model_hidden)}
    for part in args.parts:
        fn = parts[part]
        t0 = time.time()
        doc[part] = fn()
        doc["seconds"][part] = time.time() - t0
        if dist.get_rank() == 0:
            print(f"[offload_bench ranks={ranks}] {part}: {time.time() - t0:.1f} s", flush=True)
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
