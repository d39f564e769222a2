#!/bin/bash
# The caching allocator's own record of the rows' configurations
# (run_step.py --allocator-trace, run_step_allocator.py), for trainsim's allocator model
# (sim/costs/caching_allocator.hpp) to be checked against: is max_memory_reserved what the recorded
# requests, replayed through the model from the segments held at the start, give?
# Phases, in the order given:
#   gpt    the 0.36 B GPT rows' configurations: single GPU (GPU 0), then DDP, FSDP2 ZeRO-2 and ZeRO-3
#          (micro-batches of 4, two per step) and GPipe and 1F1B on 2 stages (8 micro-batches of 2)
#   llama  Llama rows' configurations: single GPU (16 layers of Llama 3 8B's shape), then DDP (16 layers)
#          and FSDP2 ZeRO-3 and 1F1B at 2 GPUs (32 layers)
#   OUT=$OUT bash reports/validation/scripts/run_allocator_rows.sh gpt llama  (2 GPUs)
# Every configuration: 2 warm-up and 2 timed steps, no profiler trace. Results: $OUT/small.tgz.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/allocator_out}
R=${R:-/tmp/allocator_runs}
source "$HERE/device_lib.sh"
begin
require_gpu
common='"steps": 2, "warmup": 2, "no_trace": true, "allocator_trace": true'
gpt='"layers": 24, "hidden": 1024, "heads": 16'
llama='"arch": "llama", "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "hidden": 4096, "vocab": 128256, "seq": 2048'
for ph in "$@"; do
  stamp "$ph"
  case $ph in
    gpt)
      d=$R/gpt; mkdir -p "$d"
      echo "[{\"stack\": \"single\", $gpt, \"micro_batch\": 4, \"grad_accum\": 2, $common, \"name\": \"h200x1_single_L24-h1024_mb4x2\"}]" >"$d/plan1.json"
      cat >"$d/plan2.json" <<PLAN
[{"stack": "ddp", $gpt, "micro_batch": 4, "grad_accum": 2, $common, "name": "h200x2_ddp_L24-h1024_mb4x2"},
 {"stack": "fsdp2-zero2", $gpt, "micro_batch": 4, "grad_accum": 2, $common, "name": "h200x2_fsdp2-zero2_L24-h1024_mb4x2"},
 {"stack": "fsdp2-zero3", $gpt, "micro_batch": 4, "grad_accum": 2, $common, "name": "h200x2_fsdp2-zero3_L24-h1024_mb4x2"},
 {"stack": "pipe-gpipe", $gpt, "micro_batch": 2, "micro_batches": 8, $common, "name": "h200x2_pipe-gpipe_L24-h1024_mb2x8"},
 {"stack": "pipe-1f1b", $gpt, "micro_batch": 2, "micro_batches": 8, $common, "name": "h200x2_pipe-1f1b_L24-h1024_mb2x8"}]
PLAN
      run_plans "$d" 120 ;;
    llama)
      d=$R/llama; mkdir -p "$d"
      echo "[{\"stack\": \"single\", \"layers\": 16, \"micro_batch\": 1, \"grad_accum\": 2, $common, $llama, \"name\": \"h200x1_single_llama_L16-h4096_mb1x2\"}]" >"$d/plan1.json"
      cat >"$d/plan2.json" <<PLAN
[{"stack": "ddp", "layers": 16, "micro_batch": 1, "grad_accum": 2, $common, $llama, "name": "h200x2_ddp_llama_L16-h4096_mb1x2"},
 {"stack": "fsdp2-zero3", "layers": 32, "micro_batch": 1, "grad_accum": 2, $common, $llama, "name": "h200x2_fsdp2-zero3_llama_L32-h4096_mb1x2"},
 {"stack": "pipe-1f1b", "layers": 32, "micro_batch": 1, "micro_batches": 8, $common, $llama, "name": "h200x2_pipe-1f1b_llama_L32-h4096_mb1x8"}]
PLAN
      run_plans "$d" 150 ;;
  esac
done
stamp end
pack
ls -la "$OUT"
