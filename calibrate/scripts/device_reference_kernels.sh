#!/usr/bin/env bash
# On one GPU (kind nvidia-h200): the reference's own kernels by class
# (trainsim-calibrate --full --only reference_kernels, profile.json against h200x4-measured as
# base), then the op profile of the single-GPU L24-h1024 row with the same binary, so that the
# kernels' rates in isolation can be set beside their times inside the step. Run from a folder
# holding the binary (B) and this script; results under $OUT.
set -u
B=${B:-./trainsim-calibrate}
BASE=${BASE:-./h200x4-measured.json}
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
{ nvidia-smi; nvidia-smi -q | grep -iE "product name|driver version|cuda version|clocks|power limit" | head -30; } > "$OUT/env.txt" 2>&1
timeout 240 "$B" --full --only reference_kernels --gpus 1 --base "$BASE" --name h200-reference-kernels \
  --out "$OUT/reference_kernels" > "$OUT/reference_kernels.txt" 2>&1
echo "reference_kernels rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/summary.txt"
TRAINSIM_REF_OP_PROFILE=1 timeout 90 "$B" reference --mode single --layers 24 --hidden 1024 --heads 16 --micro-batch 4 \
  --grad-accum 2 --steps 3 --warmup 1 --name prof_single --out /tmp/prof > "$OUT/op_profile_single_L24-h1024.txt" 2>&1
echo "profile rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/summary.txt"
