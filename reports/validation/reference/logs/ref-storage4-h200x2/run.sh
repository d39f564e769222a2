#!/usr/bin/env bash
# Branch ref-storage4, as run (call 1 of this branch; the only one): the folder devrun-storage4/
# (untracked in /work/main, removed after) held this script and build-ref/trainsim-calibrate built
# from commit f0b6b20 (calibrate/ of that commit: --storage-file-mib, --storage-mixed-file-mib;
# sha256 of the binary in call1/env.txt). The run tool's command was
#   export NCCL_NVLS_ENABLE=0; OUT=$OUT bash devrun-storage4/run.sh
# with kind nvidia-h200-x2, needs_h200 true, timeout_s 590. What came: 2 x NVIDIA H200, driver
# 580.159.04, 32 CPUs, 251 GiB memory, the 256 GiB virtio disk /dev/vda (128 GiB free); the script
# ran 483.7 s (wall_s), rc 0. One file came back, $OUT/storage4.tar.gz (sha256 525b4e85...379d);
# call1/ is it unpacked, except the row's two JSONs, which are in h200x2/ byte for byte as they came
# (call1/runs.sha256; scripts/machine_storage.py then added machine_storage to the row's JSON).
# call1/diskstats.txt: /proc/diskstats of vda around each step (sectors of 512 bytes).
# (The file below the header is the script as sent, its first line, the shebang, dropped.)
# Branch ref-storage4 (see the header of the committed copy for how it was run).
# One device call on one machine: the storage bench (reads/writes alone and the mixed read+write
# pattern, `--quick --only storage`) with row-sized files (16 GiB: the plain bench's test file and
# each of storage_mixed's files) and with the default 1 GiB files; the L32 storage-offload reference
# row with the flags of its committed run; then both benches again while time is left. Everything
# is written under $W and packed into ONE file, $OUT/storage4.tar.gz, on every exit path (the run
# tool returns at most 8 files).
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
W=/tmp/storage4
rm -rf "$W"; mkdir -p "$W/runs"
pack() {
  trap - EXIT TERM INT
  echo "packed at $(el)s" >> "$W/progress.txt"
  tar -C /tmp -czf "$OUT/storage4.tar.gz" storage4 2>> "$OUT/pack_errors.txt"
  [ -s "$OUT/pack_errors.txt" ] || rm -f "$OUT/pack_errors.txt"
}
trap pack EXIT
trap 'echo "signal at $(el)s" >> "$W/progress.txt"; exit 143' TERM INT
{ date -u; hostname; cat /etc/machine-id; cat /sys/class/dmi/id/product_uuid; nvidia-smi -L; nvidia-smi;
  nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6; nvidia-smi topo -m;
  nproc; free -g; df -h / /tmp; lsblk -o NAME,SIZE,TYPE,SERIAL,MODEL,MOUNTPOINT; cat /sys/block/vda/queue/scheduler;
  uname -r; sha256sum ./trainsim-calibrate; } > "$W/env.txt" 2>&1
disk() { echo "$1 at $(el)s: $(grep -w vda /proc/diskstats)" >> "$W/diskstats.txt"; }
# bench LABEL TIMEOUT [flags]: one storage bench run; its files removed after.
bench() {
  local label=$1 limit=$2; shift 2
  mkdir -p /tmp/st4_$label
  disk "bench $label start"
  timeout "$limit" ./trainsim-calibrate --quick --only storage --storage-dir /tmp/st4_$label "$@" \
    --out /tmp/stcal_$label > "$W/storage_$label.txt" 2>&1
  echo "storage run $label rc=$? $(el)s (limit $limit s; flags: $*)" >> "$W/storage_$label.txt"
  disk "bench $label end"
  mkdir -p "$W/storage_calibration_$label"
  cp /tmp/stcal_$label/summary.json /tmp/stcal_$label/raw_results.json "$W/storage_calibration_$label/" 2>/dev/null
  rm -rf /tmp/st4_$label
  df -h /tmp >> "$W/storage_$label.txt" 2>&1
  echo "bench $label done $(el)s" >> "$W/progress.txt"
}
ROW16="--storage-file-mib 16384 --storage-mixed-file-mib 16384"
bench 16g_1 200 $ROW16
bench 1g_1 100
rm -rf /tmp/refstore; mkdir -p /tmp/refstore
disk "row start"
timeout 300 ./trainsim-calibrate reference --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 32 --hidden 2560 \
  --heads 20 --micro-batch 1 --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L32-h2560_mb1x2 \
  --out "$W/runs" > "$W/run_L32.txt" 2>&1
echo "row rc=$? $(el)s" >> "$W/run_L32.txt"
disk "row end"
df -h /tmp >> "$W/run_L32.txt" 2>&1
rm -rf /tmp/refstore
echo "L32 done $(el)s" >> "$W/progress.txt"
if [ "$(el)" -lt 420 ]; then
  lim=$(( 560 - $(el) )); [ "$lim" -gt 200 ] && lim=200
  bench 16g_2 "$lim" $ROW16
fi
if [ "$(el)" -lt 490 ]; then
  bench 1g_2 $(( 565 - $(el) ))
fi
echo "total $(el)s" >> "$W/progress.txt"
