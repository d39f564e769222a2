#!/usr/bin/env bash
# Call 15 (branch ref-rows), as run: the folder devrun-ref/ (untracked, removed after) held this
# script, build-ref/trainsim-calibrate of branch ref-rows (commit c6fa7c3's sources) and
# hwprofiles/h200x4-measured.json; the run tool's command was
#   OUT=$OUT bash devrun-ref/run.sh
# with kind nvidia-h200-x2 and needs_h200. Results under $OUT came back as call1/.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
{ nvidia-smi; nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -10; } > "$OUT/env.txt" 2>&1
timeout 300 ./trainsim-calibrate --full --only reference_kernels --gpus 1 --base ./h200x4-measured.json --name h200-reference-kernels \
  --out "$OUT/reference_kernels" > "$OUT/reference_kernels.txt" 2>&1
echo "reference_kernels rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/summary.txt"
