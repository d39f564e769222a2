#!/usr/bin/env bash
# Branch ref-probe, as run (call 1 of this branch; the only one): the folder devrun-probe/
# (untracked in /work/main, removed after) held this script and build-ref/trainsim-calibrate built
# from commit f76bd73 (calibrate/ of that commit: --storage-probe-chunks), stripped (sha256
# e44384d1...bde362b8 in call1/env.txt). The run tool's command was
#   export NCCL_NVLS_ENABLE=0; OUT=$OUT bash devrun-probe/run.sh
# with kind nvidia-h200-x2, needs_h200 true, timeout_s 590. What came: 2 x NVIDIA H200, driver
# 580.159.04, 32 CPUs, 251 GiB memory, the 256 GiB virtio disk /dev/vda (mq-deadline, 128 GiB
# free); the script ran 421.5 s (wall_s), rc 0. One file came back, $OUT/probe.tar.gz (sha256
# 0290ab38...7fb2); call1/ is it unpacked, except the rows' JSONs, which are in h200x2/ byte for
# byte as they came (call1/runs.sha256; scripts/machine_storage.py then added machine_storage to
# each). call1/diskstats.txt: /proc/diskstats (every disk but loop and ram devices, sectors of 512
# bytes) around each bench and row.
# (The file below the header is the script as sent, its first line, the shebang, dropped.)
# Branch ref-probe (see the header of the committed copy for how it was run).
# One device call on one machine: the storage bench with row-sized files (16 GiB: the plain bench's
# test file and each of storage_mixed's files), then both storage-offload reference rows with the
# flags of their committed runs plus --storage-probe-chunks (every rank, right before each timed
# step, streams the first N chunks of its state file through the step's read/write pattern,
# unchanged: a calibration of the disk beside each step; L32: 64 of its 317 chunks per rank, L24:
# all 43 of its), then the bench again while time is left. Everything is written under $W and
# packed into ONE file, $OUT/probe.tar.gz, on every exit path (the run tool returns at most 8 files).
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
BIN=${BIN:-./trainsim-calibrate}
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
W=/tmp/probe
rm -rf "$W"; mkdir -p "$W/runs"
pack() {
  trap - EXIT TERM INT
  echo "packed at $(el)s" >> "$W/progress.txt"
  tar -C /tmp -czf "$OUT/probe.tar.gz" probe 2>> "$OUT/pack_errors.txt"
  [ -s "$OUT/pack_errors.txt" ] || rm -f "$OUT/pack_errors.txt"
}
trap pack EXIT
trap 'echo "signal at $(el)s" >> "$W/progress.txt"; exit 143' TERM INT
{ date -u; hostname; cat /etc/machine-id; nvidia-smi -L; nvidia-smi;
  nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6; nvidia-smi topo -m;
  nproc; free -g; df -h / /tmp; lsblk -o NAME,SIZE,TYPE,SERIAL,MODEL,MOUNTPOINT; cat /sys/block/*/queue/scheduler;
  uname -r; sha256sum "$BIN"; } > "$W/env.txt" 2>&1
disk() { echo "$1 at $(el)s: $(grep -vE ' (loop|ram)[0-9]+ ' /proc/diskstats | tr '\n' '|')" >> "$W/diskstats.txt"; }
# bench LABEL TIMEOUT [flags]: one storage bench run; its files removed after.
bench() {
  local label=$1 limit=$2; shift 2
  mkdir -p /tmp/stp_$label
  disk "bench $label start"
  timeout "$limit" "$BIN" --quick --only storage --storage-dir /tmp/stp_$label "$@" \
    --out /tmp/stpcal_$label > "$W/storage_$label.txt" 2>&1
  echo "storage run $label rc=$? $(el)s (limit $limit s; flags: $*)" >> "$W/storage_$label.txt"
  disk "bench $label end"
  mkdir -p "$W/storage_calibration_$label"
  cp /tmp/stpcal_$label/summary.json /tmp/stpcal_$label/raw_results.json "$W/storage_calibration_$label/" 2>/dev/null
  rm -rf /tmp/stp_$label
  df -h /tmp >> "$W/storage_$label.txt" 2>&1
  echo "bench $label done $(el)s" >> "$W/progress.txt"
}
# row LABEL TIMEOUT [reference flags]: one reference row; its state files removed after.
row() {
  local label=$1 limit=$2; shift 2
  rm -rf /tmp/refstore; mkdir -p /tmp/refstore
  disk "row $label start"
  timeout "$limit" "$BIN" reference "$@" --out "$W/runs" > "$W/run_$label.txt" 2>&1
  echo "row rc=$? $(el)s (limit $limit s)" >> "$W/run_$label.txt"
  disk "row $label end"
  df -h /tmp >> "$W/run_$label.txt" 2>&1
  rm -rf /tmp/refstore
  echo "$label done $(el)s" >> "$W/progress.txt"
}
ROW16="--storage-file-mib 16384 --storage-mixed-file-mib 16384"
bench 16g_1 200 $ROW16
row L32 280 --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 32 --hidden 2560 --heads 20 --micro-batch 1 \
  --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L32-h2560_mb1x2 --storage-probe-chunks 64
row L24 90 --mode infinity --gpus 2 --storage-dir /tmp/refstore --layers 24 --hidden 1024 --heads 16 --micro-batch 4 \
  --grad-accum 2 --steps 3 --warmup 1 --name h200x2_ref-infinity-storage_L24-h1024_mb4x2 --storage-probe-chunks 43
lim=$(( 575 - $(el) )); [ "$lim" -gt 200 ] && lim=200
if [ "$lim" -ge 130 ]; then
  bench 16g_2 "$lim" $ROW16
else
  echo "bench 16g_2 skipped: $lim s left" >> "$W/progress.txt"
fi
echo "total $(el)s" >> "$W/progress.txt"
