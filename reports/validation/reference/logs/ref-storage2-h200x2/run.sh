#!/usr/bin/env bash
# Branch ref-storage2, as run: the folder devrun-storage/ (untracked, removed after) held this
# script and build-ref/trainsim-calibrate of branch ref-storage2 (main at dd89315's sources); the
# run tool's command was
#   OUT=$OUT bash devrun-storage/run.sh
# with kind nvidia-h200-x2 and needs_h200. Results under $OUT came back as call1/, except runs/:
# its two files are h200x2/h200x2_ref-infinity-storage_L32-h2560_mb1x2{,.model}.json, unchanged
# (call1/runs.sha256), kept once so that `trainsim validate` does not read the row twice.
# The storage row of call 11 (logs/reference3-call2/) at the size of the host row
# h200x2_ref-infinity_L32-h2560_mb1x2: the same flags as that storage row apart from the model
# size (layers, hidden, heads, micro-batch, grad-accum); the same directories (/tmp/st3 for the
# storage bench, /tmp/refstore for the row). Disk need: 2 ranks x 317 chunks x 48 MiB = 30 GiB.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
{ date; nvidia-smi; nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -10; nvidia-smi topo -m;
  nproc; free -g; df -h / /tmp; lsblk; } > "$OUT/env.txt" 2>&1
mkdir -p /tmp/st3 /tmp/refstore "$OUT/runs"
timeout 280 ./trainsim-calibrate reference --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 32 --hidden 2560 \
  --heads 20 --micro-batch 1 --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L32-h2560_mb1x2 \
  --out "$OUT/runs" > "$OUT/run.txt" 2>&1
echo "row rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/run.txt"
df -h /tmp >> "$OUT/run.txt" 2>&1
rm -rf /tmp/refstore/*
# The storage bench of call 11 on this machine, if time is left.
if [ $(( $(date +%s) - t0 )) -lt 240 ]; then
  timeout 60 ./trainsim-calibrate --quick --only storage --storage-dir /tmp/st3 --out /tmp/stcal > "$OUT/storage.txt" 2>&1
  echo "storage rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/storage.txt"
  mkdir -p "$OUT/storage_calibration"
  cp /tmp/stcal/summary.json /tmp/stcal/raw_results.json "$OUT/storage_calibration/" 2>/dev/null
fi
echo "total $(( $(date +%s) - t0 ))s" >> "$OUT/run.txt"
