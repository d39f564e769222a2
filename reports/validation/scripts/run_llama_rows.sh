#!/bin/bash
# The modern layer's rows (reports/validation/measured/llama-*).
# Phases, in the order given:
#   smoke   every stack of run_step.py on a tiny Llama-style decoder (model_llama.py): 1 rank, then 2
#           (the code paths start, step and write; not rows)
#   saved   calibrate/scripts/saved_bytes_probe.py on GPU 0: one layer's saved bytes, GPT and Llama
#   rows    the Llama rows of 1 and 2 GPUs: single GPU (GPU 0), then DDP, FSDP2 ZeRO-3 and 1F1B at 2
#   rows4   the Llama 3 8B rows of 4 GPUs: FSDP2 ZeRO-2, FSDP2 CPU offload, GPipe on 4 stages
#   OUT=$OUT bash reports/validation/scripts/run_llama_rows.sh smoke saved rows  (2 GPUs)
#   rowsac  the Llama rows under activation checkpointing (--recompute full), micro-batches of 2: single
#           GPU (16 layers), then FSDP2 ZeRO-3 and 1F1B at 2 (Llama 3 8B)
#   rows4ac under activation checkpointing at 4 GPUs: DDP (16 layers of Llama 3 8B's shape, micro-batches
#           of 2), FSDP2 ZeRO-3 and 1F1B on 4 stages of 16 layers of Llama 3 70B's shape (hidden 8192, 64
#           query and 8 key/value heads, FFN 28672)
#   off4x3  the Llama 3 8B CPU-offload row of the 4-GPU rows again, three launches (fresh process groups), no trace
#   OUT=$OUT bash reports/validation/scripts/run_llama_rows.sh saved rows4  (4 GPUs)
#   OUT=$OUT bash reports/validation/scripts/run_llama_rows.sh off4x3  (4 GPUs)
#   OUT=$OUT bash reports/validation/scripts/run_llama_rows.sh rows4ac  (4 GPUs)
#   OUT=$OUT bash reports/validation/scripts/run_llama_rows.sh saved rowsac  (2 GPUs)
# Results: $OUT/small.tgz (JSON, logs) and $OUT/traces.tar.partNN (the rows' profiler traces).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CAL=$HERE/../../../calibrate/scripts
OUT=${OUT:-/tmp/llama_out}
R=${R:-/tmp/llama_runs}
source "$HERE/device_lib.sh"
begin
require_gpu
llama='"arch": "llama", "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "hidden": 4096, "vocab": 128256, "seq": 2048'
for ph in "$@"; do
  stamp "$ph"
  case $ph in
    smoke)
      d=$R/smoke; mkdir -p "$d"
      tiny='"arch": "llama", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn_hidden": 640, "vocab": 1024, "seq": 256, "micro_batch": 2, "steps": 2, "warmup": 1, "no_trace": true'
      echo "[{\"stack\": \"single\", \"grad_accum\": 2, $tiny, \"name\": \"smoke_llama_single\"}]" >"$d/plan1.json"
      cat >"$d/plan2.json" <<PLAN
[{"stack": "ddp", "grad_accum": 2, $tiny, "name": "smoke_llama_ddp"},
 {"stack": "fsdp2-zero2", "grad_accum": 2, $tiny, "name": "smoke_llama_fsdp2-zero2"},
 {"stack": "fsdp2-zero3", "grad_accum": 2, $tiny, "name": "smoke_llama_fsdp2-zero3"},
 {"stack": "fsdp2-offload", "grad_accum": 2, $tiny, "name": "smoke_llama_fsdp2-offload"},
 {"stack": "pipe-gpipe", "micro_batches": 4, $tiny, "name": "smoke_llama_pipe-gpipe"},
 {"stack": "pipe-1f1b", "micro_batches": 4, $tiny, "name": "smoke_llama_pipe-1f1b"}]
PLAN
      run_plans "$d" 300
      ls "$d" | grep -E "^smoke_.*(json)$" | tr '
' ' '; echo ;;
    saved)
      d=$R/saved; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=0 timeout 120 python3 "$CAL/saved_bytes_probe.py" --out "$d/saved_bytes.json" \
        >"$d/log.txt" 2>&1; echo "saved rc $?"; cat "$d/log.txt" | tail -12 ;;
    rows)
      d=$R/rows; mkdir -p "$d"
      echo "[{\"stack\": \"single\", \"layers\": 16, \"micro_batch\": 1, \"grad_accum\": 2, \"steps\": 6, \"warmup\": 2, $llama, \"name\": \"h200x1_single_llama_L16-h4096_mb1x2\"}]" >"$d/plan1.json"
      cat >"$d/plan2.json" <<PLAN
[{"stack": "ddp", "layers": 16, "micro_batch": 1, "grad_accum": 2, "steps": 6, "warmup": 2, $llama, "name": "h200x2_ddp_llama_L16-h4096_mb1x2"},
 {"stack": "fsdp2-zero3", "layers": 32, "micro_batch": 1, "grad_accum": 2, "steps": 6, "warmup": 2, $llama, "name": "h200x2_fsdp2-zero3_llama_L32-h4096_mb1x2"},
 {"stack": "pipe-1f1b", "layers": 32, "micro_batch": 1, "micro_batches": 8, "steps": 6, "warmup": 2, $llama, "name": "h200x2_pipe-1f1b_llama_L32-h4096_mb1x8"}]
PLAN
      run_plans "$d" 180 ;;
    rowsac)
      d=$R/rowsac; mkdir -p "$d"
      echo "[{\"stack\": \"single\", \"layers\": 16, \"micro_batch\": 2, \"grad_accum\": 2, \"recompute\": \"full\", \"steps\": 6, \"warmup\": 2, $llama, \"name\": \"h200x1_single_llama_ac_L16-h4096_mb2x2\"}]" >"$d/plan1.json"
      cat >"$d/plan2.json" <<PLAN
[{"stack": "fsdp2-zero3", "layers": 32, "micro_batch": 2, "grad_accum": 2, "recompute": "full", "steps": 6, "warmup": 2, $llama, "name": "h200x2_fsdp2-zero3_llama_ac_L32-h4096_mb2x2"},
 {"stack": "pipe-1f1b", "layers": 32, "micro_batch": 2, "micro_batches": 8, "recompute": "full", "steps": 6, "warmup": 2, $llama, "name": "h200x2_pipe-1f1b_llama_ac_L32-h4096_mb2x8"}]
PLAN
      run_plans "$d" 180 ;;
    off4x3)
      for k in 1 2 3; do
        d=$R/off4x3/launch$k; mkdir -p "$d"
        echo "[{\"stack\": \"fsdp2-offload\", \"layers\": 32, \"micro_batch\": 1, \"grad_accum\": 2, \"steps\": 4, \"warmup\": 1, \"no_trace\": true, $llama, \"name\": \"h200x4_fsdp2-offload_llama_L32-h4096_mb1x2\"}]" >"$d/plan4.json"
        run_plans "$d" 240
        stamp "after launch $k"
      done ;;
    rows4ac)
      d=$R/rows4ac; mkdir -p "$d"
      big='"arch": "llama", "heads": 64, "kv_heads": 8, "ffn_hidden": 28672, "hidden": 8192, "vocab": 128256, "seq": 2048'
      cat >"$d/plan4.json" <<PLAN
[{"stack": "ddp", "layers": 16, "micro_batch": 2, "grad_accum": 2, "recompute": "full", "steps": 6, "warmup": 2, $llama, "name": "h200x4_ddp_llama_ac_L16-h4096_mb2x2"},
 {"stack": "fsdp2-zero3", "layers": 16, "micro_batch": 1, "grad_accum": 4, "recompute": "full", "steps": 6, "warmup": 2, $big, "name": "h200x4_fsdp2-zero3_llama_ac_L16-h8192_mb1x4"},
 {"stack": "pipe-1f1b", "layers": 16, "micro_batch": 1, "micro_batches": 8, "recompute": "full", "steps": 6, "warmup": 2, $big, "name": "h200x4_pipe-1f1b_llama_ac_L16-h8192_mb1x8"}]
PLAN
      run_plans "$d" 180 ;;
    rows4)
      d=$R/rows4; mkdir -p "$d"
      cat >"$d/plan4.json" <<PLAN
[{"stack": "fsdp2-zero2", "layers": 32, "micro_batch": 1, "grad_accum": 2, "steps": 6, "warmup": 2, $llama, "name": "h200x4_fsdp2-zero2_llama_L32-h4096_mb1x2"},
 {"stack": "pipe-gpipe", "layers": 32, "micro_batch": 1, "micro_batches": 8, "steps": 6, "warmup": 2, $llama, "name": "h200x4_pipe-gpipe_llama_L32-h4096_mb1x8"},
 {"stack": "fsdp2-offload", "layers": 32, "micro_batch": 1, "grad_accum": 2, "steps": 4, "warmup": 1, "time_limit": 240, $llama, "name": "h200x4_fsdp2-offload_llama_L32-h4096_mb1x2"}]
PLAN
      run_plans "$d" 180 ;;
  esac
done
stamp end
pack
ls -la "$OUT"
