#!/usr/bin/env python3
"""Corrects the configuration description of the committed reference rows (not their measurements).

The rows of 2026-11-26 were written before trainsim-calibrate reference named its own training
stack and before it wrote the pipeline's stage split into the strategy:
- stack.name "deepspeed" -> "trainsim-reference" (workloads/stacks/training_stacks.md), and the
  implementation text the tool now writes;
- pipeline rows: strategy first_stage_layers / last_stage_layers from the split that ran
  (stack.details.layers_per_stage, written by the tool from the same split_layers()).
- ZeRO-3 rows: grad_sync said "after its backward of the last micro-batch"; the code
  (ref_param_store.cpp grads_done) reduce-scatters after every micro-batch's backward;
- pipeline rows: bubble_fraction re-derived from the row's own measurements as the tool now
  writes it: per stage 1 - compute_busy_s / step_time_s (the share of the whole step its compute
  stream is not running forward, backward or optimizer work: GPipe's and the simulator's
  definition), averaged over stages; the stage-span share recorded at the time is kept beside it as
  schedule_bubble_fraction.
No measurement is changed. Run from the repository root; idempotent.
"""
import glob
import json
import sys

IMPLEMENTATION = (
    "trainsim-calibrate reference: our own CUDA kernels and cuBLASLt GEMMs; stack trainsim-reference "
    "(workloads/stacks/training_stacks.md): bf16 parameters (not kept under ZeRO-3: cast from the fp32 master per "
    "gather), fp32 gradients accumulated over micro-batches and reduce-scattered in fp32, fp32 master weights and "
    "Adam moments, one static arena per GPU")


def fix(row):
    row["stack"]["name"] = "trainsim-reference"
    row["stack"]["details"]["implementation"] = IMPLEMENTATION
    details = row["stack"]["details"]
    if "grad_sync" in details:
        details["grad_sync"] = ("fp32 reduce-scatter per unit after its backward in every micro-batch, added into the "
                                "fp32 gradient shard, on the collective stream")
    per = details.get("layers_per_stage")
    if per:
        middle = per[1:-1]
        if len(set(middle)) > 1:
            sys.exit(f"{row['name']}: middle stages {middle} are not equal: the strategy cannot state this split")
        row["strategy"]["first_stage_layers"] = per[0]
        row["strategy"]["last_stage_layers"] = per[-1]
        step = row["measured"]["step_time_s"]
        stages = details["streams_per_rank"]
        for st in stages:
            if "schedule_bubble_fraction" not in st:
                st["schedule_bubble_fraction"] = st["bubble_fraction"]
            st["bubble_fraction"] = max(0.0, 1.0 - st["compute_busy_s"] / step)
        row["measured"]["busy"]["bubble_fraction"] = sum(st["bubble_fraction"] for st in stages) / len(stages)
    return row


def main():
    paths = sorted(p for p in glob.glob("reports/validation/reference/h200x*/*.json") if not p.endswith(".model.json"))
    for path in paths:
        with open(path) as f:
            row = json.load(f)
        with open(path, "w") as f:
            json.dump(fix(row), f, indent=1, ensure_ascii=False)
            f.write("\n")
    print(f"{len(paths)} rows corrected")


if __name__ == "__main__":
    main()
