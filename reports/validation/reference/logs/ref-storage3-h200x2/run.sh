#!/usr/bin/env bash
# Branch ref-storage3, as run: the folder devrun-storage3/ (untracked in /work/main, removed after)
# held this script and build-ref/trainsim-calibrate of branch ref-storage3 (main at 7ae8541's
# sources; calibrate/ unchanged since ref-storage-mixed, so the storage bench includes storage_mixed);
# the run tool's command was
#   OUT=$OUT bash devrun-storage3/run.sh
# with kind nvidia-h200-x2, needs_h200, timeout_s 590 (2 x NVIDIA H200, driver 580.159.04, 32 CPUs,
# the 256 GiB virtio disk /dev/vda; 299.6 s run). What came back under $OUT is call1/, except what
# the run tool left out because it returns at most 8 files: runs/h200x2_ref-infinity-storage_L32-h2560_mb1x2{,.model}.json
# and storage_calibration{1,2}/{summary,raw_results}.json did not come back (the $OUT of a call does not
# outlive it: a second, 1.2 s call on the still-warm machine found nothing to fetch). The L24 row's two
# files are h200x2/h200x2_ref-infinity-storage_L24-h1024_mb4x2{,.model}.json (call1/runs.sha256 is
# the row as it came back, before scripts/machine_storage.py added machine_storage). A rerun should
# pack $OUT into one tar file.
# One device call on one machine: the storage bench (plain reads/writes alone and the mixed
# read+write pattern, `--quick --only storage`), both storage-offload reference rows with the flags
# of their committed runs, then the storage bench again if time is left (spread, and drift).
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
{ date -u; hostname; cat /etc/machine-id; cat /sys/class/dmi/id/product_uuid; nvidia-smi -L; nvidia-smi;
  nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6; nvidia-smi topo -m;
  nproc; free -g; df -h / /tmp; lsblk -o NAME,SIZE,TYPE,SERIAL,MODEL,MOUNTPOINT; cat /sys/block/vda/queue/scheduler;
  uname -r; } > "$OUT/env.txt" 2>&1
mkdir -p /tmp/st3a /tmp/st3b /tmp/refstore "$OUT/runs"
bench() {  # $1: 1 or 2
  timeout $3 ./trainsim-calibrate --quick --only storage --storage-dir /tmp/st3$2 --out /tmp/stcal$1 > "$OUT/storage$1.txt" 2>&1
  echo "storage run $1 rc=$? $(el)s" >> "$OUT/storage$1.txt"
  mkdir -p "$OUT/storage_calibration$1"
  cp /tmp/stcal$1/summary.json /tmp/stcal$1/raw_results.json "$OUT/storage_calibration$1/" 2>/dev/null
  rm -rf /tmp/st3$2/*
}
bench 1 a 120
echo "bench1 done $(el)s" >> "$OUT/progress.txt"
timeout 300 ./trainsim-calibrate reference --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 32 --hidden 2560 \
  --heads 20 --micro-batch 1 --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L32-h2560_mb1x2 \
  --out "$OUT/runs" > "$OUT/run_L32.txt" 2>&1
echo "row rc=$? $(el)s" >> "$OUT/run_L32.txt"
df -h /tmp >> "$OUT/run_L32.txt" 2>&1
rm -rf /tmp/refstore/*
echo "L32 done $(el)s" >> "$OUT/progress.txt"
if [ "$(el)" -lt 440 ]; then
  timeout $(( 530 - $(el) )) ./trainsim-calibrate reference --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 24 --hidden 1024 \
    --heads 16 --micro-batch 4 --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L24-h1024_mb4x2 \
    --out "$OUT/runs" > "$OUT/run_L24.txt" 2>&1
  echo "row rc=$? $(el)s" >> "$OUT/run_L24.txt"
  rm -rf /tmp/refstore/*
  echo "L24 done $(el)s" >> "$OUT/progress.txt"
fi
if [ "$(el)" -lt 460 ]; then
  bench 2 b $(( 575 - $(el) ))
  echo "bench2 done $(el)s" >> "$OUT/progress.txt"
fi
echo "total $(el)s" >> "$OUT/progress.txt"
