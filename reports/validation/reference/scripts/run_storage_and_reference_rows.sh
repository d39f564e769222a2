#!/bin/bash
# Branch reference3's device call (4 x H200): the storage tier of the lent machine measured by
# trainsim-calibrate (the 4-GPU profile's storage was copied from the DGX base, not measured), the
# op profile of the single-GPU L24-h1024 row with the vectorized elementwise kernels, then
# calibrate/reference/device_reference.sh: the check suite, the gpu tests and the 20 rows (2-GPU
# rows on GPUs 0 and 1, the single row on GPU 0). Run from a folder holding trainsim-calibrate,
# calibrate_gpu_test, device_reference.sh and this script; everything lands under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
D=$(cd "$(dirname "$0")" && pwd); B=$D/trainsim-calibrate
# (Without the next line the storage bench and the storage row find no directory and stop at once.)
mkdir -p "$OUT/pre" /tmp/st3 /tmp/refstore
t0=$(date +%s)
timeout 90 "$B" --quick --only storage --storage-dir /tmp/st3 --out /tmp/cal-storage > "$OUT/pre/storage.txt" 2>&1
echo "storage rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/pre/summary.txt"
cp /tmp/cal-storage/summary.json "$OUT/pre/storage_summary.json" 2>/dev/null
cp /tmp/cal-storage/raw_results.json "$OUT/pre/storage_raw_results.json" 2>/dev/null
{ df -h /tmp; lsblk; cat /sys/block/*/queue/rotational; } > "$OUT/pre/disk.txt" 2>&1
TRAINSIM_REF_OP_PROFILE=1 timeout 60 "$B" reference --mode single --layers 24 --hidden 1024 --heads 16 --micro-batch 4 \
  --grad-accum 2 --steps 3 --warmup 1 --name prof_single --out /tmp/prof > "$OUT/pre/op_profile_single_L24-h1024.txt" 2>&1
echo "profile rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/pre/summary.txt"
L24="--layers 24 --hidden 1024 --heads 16"
RUNS="60 --mode 1f1b --gpus 2 $L24 --micro-batch 2 --grad-accum 8 --steps 5 --warmup 2 --name h200x2_ref-1f1b_L24-h1024_mb2x8
60 --mode 1f1b --gpus 4 $L24 --micro-batch 2 --grad-accum 8 --steps 5 --warmup 2 --name h200x4_ref-1f1b_L24-h1024_mb2x8
60 --mode gpipe --gpus 2 $L24 --micro-batch 2 --grad-accum 8 --steps 5 --warmup 2 --name h200x2_ref-gpipe_L24-h1024_mb2x8
60 --mode gpipe --gpus 4 $L24 --micro-batch 2 --grad-accum 8 --steps 5 --warmup 2 --name h200x4_ref-gpipe_L24-h1024_mb2x8
60 --mode infinity --gpus 2 $L24 --micro-batch 4 --grad-accum 2 --steps 5 --warmup 2 --name h200x2_ref-infinity_L24-h1024_mb4x2
60 --mode infinity --gpus 4 $L24 --micro-batch 4 --grad-accum 2 --steps 5 --warmup 2 --name h200x4_ref-infinity_L24-h1024_mb4x2
60 --mode single $L24 --micro-batch 4 --grad-accum 2 --steps 5 --warmup 2 --name h200x1_ref-single_L24-h1024_mb4x2
60 --mode zero3 --gpus 2 $L24 --micro-batch 4 --grad-accum 2 --steps 8 --warmup 2 --name h200x2_ref-zero3_L24-h1024_mb4x2
60 --mode zero3 --gpus 2 $L24 --micro-batch 4 --grad-accum 2 --steps 8 --warmup 2 --recompute layer --name h200x2_ref-zero3-ckpt_L24-h1024_mb4x2
60 --mode zero3 --gpus 4 $L24 --micro-batch 4 --grad-accum 2 --steps 8 --warmup 2 --name h200x4_ref-zero3_L24-h1024_mb4x2
60 --mode 1f1b --gpus 2 --layers 32 --hidden 5120 --heads 40 --micro-batch 1 --grad-accum 8 --steps 4 --warmup 1 --name h200x2_ref-1f1b_L32-h5120_mb1x8
60 --mode 1f1b --gpus 4 --layers 36 --hidden 6144 --heads 48 --micro-batch 1 --grad-accum 16 --steps 4 --warmup 1 --name h200x4_ref-1f1b_L36-h6144_mb1x16
60 --mode gpipe --gpus 2 --layers 26 --hidden 4096 --heads 32 --micro-batch 1 --grad-accum 8 --steps 4 --warmup 1 --name h200x2_ref-gpipe_L26-h4096_mb1x8
60 --mode gpipe --gpus 4 --layers 32 --hidden 5120 --heads 40 --micro-batch 1 --grad-accum 8 --steps 4 --warmup 1 --name h200x4_ref-gpipe_L32-h5120_mb1x8
90 --mode infinity --gpus 2 --layers 32 --hidden 2560 --heads 20 --micro-batch 1 --grad-accum 2 --steps 4 --warmup 1 --name h200x2_ref-infinity_L32-h2560_mb1x2
90 --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 24 --hidden 1024 --heads 16 --micro-batch 4 --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L24-h1024_mb4x2
90 --mode infinity --gpus 4 --layers 32 --hidden 2560 --heads 20 --micro-batch 1 --grad-accum 2 --steps 4 --warmup 1 --name h200x4_ref-infinity_L32-h2560_mb1x2
60 --mode zero3 --gpus 2 --layers 40 --hidden 5120 --heads 40 --micro-batch 1 --grad-accum 2 --steps 6 --warmup 2 --name h200x2_ref-zero3_L40-h5120_mb1x2
60 --mode zero3 --gpus 4 --layers 48 --hidden 6144 --heads 48 --micro-batch 1 --grad-accum 2 --steps 6 --warmup 2 --name h200x4_ref-zero3_L48-h6144_mb1x2
60 --mode zero3 --gpus 4 --layers 48 --hidden 6144 --heads 48 --micro-batch 1 --grad-accum 2 --steps 6 --warmup 2 --recompute layer --name h200x4_ref-zero3-ckpt_L48-h6144_mb1x2" \
  bash "$D/device_reference.sh"
