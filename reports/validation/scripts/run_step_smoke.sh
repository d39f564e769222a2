#!/bin/bash
# run_step.py on every stack, small, on a GPU machine with 2 GPUs: the stacks start, step and write
# their measured runs; with REFERENCE=FILE (another run_step.py, e.g. the version before a change,
# copied beside this one so that it finds model.py) the same plan runs with it too, and
# run_step_compare.py (here, after the results came back) compares what both wrote.
#   OUT=DIR [REFERENCE=reports/validation/scripts/OLD.py] bash reports/validation/scripts/run_step_smoke.sh
# Results: $OUT/smoke.tgz (new/ and reference/: JSON and logs, traces included).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CAL=$HERE/../../../calibrate/scripts
OUT=${OUT:-/tmp/smoke_out}
R=${R:-/tmp/smoke}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p "$R" "$OUT"
dims='"layers": 4, "hidden": 256, "heads": 4, "vocab": 1024, "seq": 256, "micro_batch": 2, "steps": 3, "warmup": 1'
cat >"$R/plan2.json" <<PLAN
[{"stack": "ddp", "grad_accum": 2, $dims, "name": "smoke_ddp"},
 {"stack": "fsdp2-zero2", "grad_accum": 2, $dims, "name": "smoke_fsdp2-zero2"},
 {"stack": "fsdp2-zero3", "grad_accum": 2, $dims, "name": "smoke_fsdp2-zero3"},
 {"stack": "fsdp2-offload", "grad_accum": 2, $dims, "name": "smoke_fsdp2-offload"},
 {"stack": "pipe-gpipe", "micro_batches": 4, $dims, "name": "smoke_pipe-gpipe"},
 {"stack": "pipe-1f1b", "micro_batches": 4, $dims, "name": "smoke_pipe-1f1b"}]
PLAN
cat >"$R/plan1.json" <<PLAN
[{"stack": "single", "grad_accum": 2, $dims, "name": "smoke_single"}]
PLAN
for who in new reference; do
  script=$HERE/run_step.py
  if [ $who = reference ]; then [ -n "${REFERENCE:-}" ] || continue; script=$REFERENCE; fi
  d=$R/$who; mkdir -p "$d"
  CUDA_VISIBLE_DEVICES=0 timeout 200 torchrun --standalone --nproc-per-node 1 "$script" --plan "$R/plan1.json" \
    --out "$d" >"$d/log1.txt" 2>&1; echo "$who single rc $?"
  CUDA_VISIBLE_DEVICES=0,1 timeout 300 torchrun --standalone --nproc-per-node 2 "$script" --plan "$R/plan2.json" \
    --out "$d" >"$d/log2.txt" 2>&1; echo "$who 2-GPU plan rc $?"
  ls "$d" | grep -c "^smoke_.*[a-z0-9]\.json$" | sed "s/^/$who measured runs written: /"
done
# The host calibration builds the stacks through run_step_stacks.py too: a short run of it.
d=$R/calibration; mkdir -p "$d"
CUDA_VISIBLE_DEVICES=0,1 timeout 200 torchrun --standalone --nproc-per-node 2 "$CAL/torch_stack_dispatch.py" --samples 3 \
  --warmup 1 --depths 2 4 --pipe-layers 2 4 --pipe-micro-batches 2 4 --out "$d" >"$d/log.txt" 2>&1
echo "calibration rc $?"; grep -h "stack_dispatch\]" "$d/log.txt" | head -3
(cd "$R" && tar czf "$OUT/smoke.tgz" .)
