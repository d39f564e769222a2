#!/usr/bin/env bash
# Branch ref-storage-mixed, as run: the folder devrun-mixed/ (untracked in /work/main, removed after)
# held this script and build-ref/trainsim-calibrate of branch ref-storage-mixed (the storage bench
# with the mixed read+write part, run_mixed_storage_bench); the run tool's command was
#   OUT=$OUT bash devrun-mixed/run.sh
# with kind nvidia-h200-x2 and needs_h200. What came back under $OUT is this folder's raw/.
# One `--quick --only storage` run measures both: the plain sweep (reads alone, writes alone) and
# then reads and writes at once (1 and 2 streams, the reference's 48 MiB chunk in 8 MiB requests,
# one chunk read and one written in flight per stream); a second run if time is left, for spread.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
{ date -u; hostname; cat /etc/machine-id; cat /sys/class/dmi/id/product_uuid; nvidia-smi -L;
  nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6;
  nproc; free -g; df -h / /tmp; lsblk -o NAME,SIZE,TYPE,SERIAL,MODEL,MOUNTPOINT; cat /sys/block/vda/queue/scheduler;
  uname -r; } > "$OUT/env.txt" 2>&1
for i in 1 2; do
  if [ "$i" = 2 ] && [ $(( $(date +%s) - t0 )) -gt 110 ]; then break; fi
  mkdir -p /tmp/stm$i
  timeout 120 ./trainsim-calibrate --quick --only storage --storage-dir /tmp/stm$i --out /tmp/stcal$i > "$OUT/storage$i.txt" 2>&1
  echo "storage run $i rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/storage$i.txt"
  mkdir -p "$OUT/storage_calibration$i"
  cp /tmp/stcal$i/summary.json /tmp/stcal$i/raw_results.json "$OUT/storage_calibration$i/" 2>/dev/null
  rm -rf /tmp/stm$i
done
echo "total $(( $(date +%s) - t0 ))s" >> "$OUT/env.txt"
