#!/bin/bash
# Validation call 51 (reports/validation/README.md, row 51): the single-GPU Llama row's step and the
# GEMM probe of calibrate/scripts/torch_layer_kernels.py on one GPU, the probe before and after the
# step, the SM clock and power sampled every 100 ms throughout. Usage, from the repository root on the
# device: OUT=$OUT bash reports/validation/gemm_step_probe/run.sh
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/gpu.txt"
nvidia-smi --query-gpu=power.limit,clocks.max.sm --format=csv,noheader | tee -a "$OUT/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 >"$OUT/clocks.csv" &
sampler=$!
mark() { echo "$1 $(date -u +%Y/%m/%d\ %H:%M:%S.%N)" | tee -a "$OUT/phases.txt"; }
mark before
(cd calibrate/scripts && timeout 120 python3 torch_layer_kernels.py --parts gemm_probe --out "$OUT/before")
mark step
timeout 300 python3 reports/validation/scripts/run_step.py --stack single --arch llama --layers 16 --hidden 4096 \
  --heads 32 --kv-heads 8 --ffn-hidden 14336 --vocab 128256 --seq 2048 --micro-batch 1 --grad-accum 2 --steps 6 \
  --warmup 2 --name h200x1_single_llama_L16-h4096_mb1x2 --out "$OUT/step" >"$OUT/step.log" 2>&1
echo "step rc $?"
mark after
(cd calibrate/scripts && timeout 120 python3 torch_layer_kernels.py --parts gemm_probe --out "$OUT/after")
mark end
kill $sampler
python3 reports/validation/gemm_step_probe/analyze.py --trace "$OUT"/step/*.trace.json.gz \
  --before "$OUT/before/torch_layer_kernels.json" --after "$OUT/after/torch_layer_kernels.json" | tee "$OUT/verdict.txt"
