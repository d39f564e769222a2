#!/usr/bin/env python3
"""Host dispatch per stack: how much CPU time each PyTorch stack spends per transformer layer and per
micro-batch, measured on a tiny GPT whose kernels are far shorter than their launches (hidden 64,
2 heads, sequence 64, vocabulary 512, micro-batch 1), so a step's wall time is the host's time.

The stacks are built exactly as reports/validation/scripts/run_step.py builds them (its functions are
imported), at two depths (2 and 8 layers): the slope over the depth is the host time per layer,
the intercept the per-micro-batch (embedding, head, loss) or per-step (optimizer) part.

  python3 calibrate/scripts/torch_stack_dispatch.py --out DIR                      # single
  torchrun --standalone --nproc-per-node 2 calibrate/scripts/torch_stack_dispatch.py --out DIR   # the rest

writes DIR/torch_stack_dispatch_wN.json (rank 0). Per data-parallel stack, in microseconds of wall time
(median of --samples samples, 9 by default, after --warmup warm-up calls, 3 by default, each sample ending with torch.cuda.synchronize()):
forward (forward + loss of one micro-batch), forward_backward (no gradient synchronization: DDP
under no_sync), forward_backward_sync (DDP's last micro-batch), optimizer (AdamW step + zero_grad).
Pipelines: schedule.step() at two stage depths (--pipe-layers, 1 and 4 layers a stage by default) and
two micro-batch counts (--pipe-micro-batches, 2 and 4), one stage a rank.

The measurements live in trainsim-calibrate's framework driver (calibrate/framework/torch_stacks.py,
the torch_stacks part), which `trainsim-calibrate --full` runs at one rank on one GPU and whose
profile writer fits them into calibration.host_dispatch.stacks; this script (a maintainers' tool)
runs them under torchrun at several ranks, pipelines included, writing the layout of the committed
raw runs (reports/calibration/h200x2/host_dispatch/torch/).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import framework.torch_stacks as measure  # noqa: E402
from framework.torch_stacks import DEPTHS, PIPE_LAYERS, PIPE_MICRO_BATCHES, TINY, dp_stack, pipe_stack, run_step  # noqa: E402,F401


def main():
    global DEPTHS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stacks", nargs="+", default=None,
                    help="only these stacks (default: single at 1 rank, every other stack at more)")
    ap.add_argument("--samples", type=int, default=9, help="timed samples per figure (their median is kept)")
    ap.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS),
                    help="layers of the data-parallel stacks' runs (merge_torch_calibration.py fits the shallowest and "
                         "the deepest): the depths of the models the calibration will cost")
    ap.add_argument("--pipe-layers", type=int, nargs=2, default=list(PIPE_LAYERS),
                    help="layers a stage of the pipelines' runs (merge_torch_calibration.py fits over both)")
    ap.add_argument("--pipe-micro-batches", type=int, nargs=2, default=list(PIPE_MICRO_BATCHES),
                    help="micro-batches of the pipelines' runs (1F1B needs at least as many as stages)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls before them")
    args = ap.parse_args()
    measure.SAMPLES, measure.WARMUP, DEPTHS = args.samples, args.warmup, tuple(args.depths)
    SAMPLES, WARMUP = measure.SAMPLES, measure.WARMUP
    os.makedirs(args.out, exist_ok=True)
    run_step.setup()
    world = dist.get_world_size()
    doc = {"schema_version": 1, "kind": "trainsim.torch_stack_dispatch", "world_size": world, "tiny_model": TINY,
           "depths": list(DEPTHS), "pipe_layers": args.pipe_layers, "pipe_micro_batches": args.pipe_micro_batches,
           "samples": SAMPLES, "warmup": WARMUP,
           "provenance": {"script": "calibrate/scripts/torch_stack_dispatch.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(run_step.DEV), "torch": torch.__version__,
                          "threads_per_rank": torch.get_num_threads()},
           "stacks": {}, "errors": {}}
    stacks = ["single"] if world == 1 else ["ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload", "pipe-gpipe", "pipe-1f1b"]
    if args.stacks:
        stacks = [s for s in stacks if s in args.stacks]
    out_path = os.path.join(args.out, f"torch_stack_dispatch_w{world}.json")
    for stack in stacks:
        t0 = time.time()
        try:
            if stack.startswith("pipe-"):
                doc["stacks"][stack] = {f"L{L}_M{M}": pipe_stack(stack, L, M) for L in args.pipe_layers
                                       for M in args.pipe_micro_batches}
            else:
                doc["stacks"][stack] = {f"L{L}": dp_stack(stack, L) for L in DEPTHS}
        except Exception as e:  # noqa: BLE001 - keep the other stacks
            doc["errors"][stack] = f"{type(e).__name__}: {e}"[:2000]
        if dist.get_rank() == 0:
            print(f"[stack_dispatch] {stack}: {time.time() - t0:.1f} s", flush=True)
            with open(out_path, "w") as f:
                json.dump(doc, f, indent=1)
    dist.barrier(device_ids=[run_step.LOCAL_RANK])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
