#!/usr/bin/env bash
# Branch infinity-limit, as run (call 1 of this branch; the only one): the folder devrun-limit/ (untracked
# in /work/main, removed after) held this script and build-ref/trainsim-calibrate built from commit
# 81cd155 (calibrate/ as ec52930's but for a comment; stripped, sha256 9bbc1b2f...11dc5b, the ckpt-host
# call's binary byte for byte, in call1/env.txt). The run tool's command was
#   export NCCL_NVLS_ENABLE=0; OUT=$OUT bash devrun-limit/run.sh
# with kind nvidia-h200-x2, needs_h200 true, timeout_s 560. What came: 2 x NVIDIA H200 (143771 MiB each),
# driver 580.159.04, CUDA 13.0; the script ran 302.2 s (wall_s), rc 0; 341 s of device time counted
# (budget 1161 -> 820 s), given back right after. Both rows ran at their first micro-batch (no
# out-of-memory, no rerun; failed/ came back empty). One file came back, $OUT/limit.tar.gz (sha256
# c5d755b4...7f7282); call1/ is it unpacked, except the rows' JSONs, which are in h200x2/ byte for byte
# as they came (call1/runs.sha256; scripts/machine_storage.py then added machine_storage to the
# storage row). call1/diskstats.txt: /proc/diskstats around each bench and row.
# (The file below the header is the script as sent, its first line, the shebang, dropped.)
# Branch infinity-limit (issue 11: the ZeRO-Infinity rows near the GPU memory limit). One device call on
# one 2 x H200 machine: the storage bench with 16 GiB files, the storage-offload row at L24-h1024 mb20x2
# with its storage probes (all 43 chunks), the host-offload row at L32-h2560 mb9x2, the bench again while
# time is left. Micro-batches chosen before the call from the replay's peak (predicted_before_call.txt).
# A row that fails for lack of GPU memory (nonzero exit and the reference's or CUDA's out-of-memory
# message) is rerun once at the next smaller micro-batch; both attempts are kept.
# Everything is written under $W and packed into ONE file, $OUT/limit.tar.gz, on every exit path.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
BIN=$(pwd)/trainsim-calibrate
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
W=/tmp/limit
rm -rf "$W"; mkdir -p "$W/runs" "$W/failed"
pack() {
  trap - EXIT TERM INT
  echo "packed at $(el)s" >> "$W/progress.txt"
  tar -C /tmp -czf "$OUT/limit.tar.gz" limit 2>> "$OUT/pack_errors.txt"
  [ -s "$OUT/pack_errors.txt" ] || rm -f "$OUT/pack_errors.txt"
}
trap pack EXIT
trap 'echo "signal at $(el)s" >> "$W/progress.txt"; exit 143' TERM INT
{ date -u; hostname; cat /etc/machine-id; nvidia-smi -L; nvidia-smi;
  nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6; nvidia-smi topo -m;
  nvidia-smi --query-gpu=index,memory.total,memory.used,memory.free --format=csv;
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
# attempt LABEL TIMEOUT [reference flags]: one reference run; state files removed after; returns its rc.
attempt() {
  local label=$1 limit=$2; shift 2
  rm -rf /tmp/refstore; mkdir -p /tmp/refstore
  disk "row $label start"
  timeout "$limit" "$BIN" reference "$@" --out "$W/runs" > "$W/run_$label.txt" 2>&1
  local rc=$?
  echo "row rc=$rc $(el)s (limit $limit s)" >> "$W/run_$label.txt"
  disk "row $label end"
  nvidia-smi --query-gpu=index,memory.used,memory.free --format=csv >> "$W/run_$label.txt" 2>&1
  df -h /tmp >> "$W/run_$label.txt" 2>&1
  rm -rf /tmp/refstore
  echo "$label rc=$rc done $(el)s" >> "$W/progress.txt"
  return $rc
}
oom() { grep -qiE "MiB are free|out of memory|cudaErrorMemoryAllocation" "$1"; }
# row LABEL TIMEOUT MB NAME_STEM [other reference flags]: the row at MB; on lack of memory once more at MB-1.
row() {
  local label=$1 limit=$2 mb=$3 stem=$4; shift 4
  attempt "${label}_mb$mb" "$limit" "$@" --micro-batch "$mb" --name "${stem}_mb${mb}x2"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && oom "$W/run_${label}_mb$mb.txt"; then
    { echo "name ${stem}_mb${mb}x2"; echo "reason out of GPU memory (rc $rc)"; echo "error:";
      tail -5 "$W/run_${label}_mb$mb.txt"; } > "$W/failed/${stem}_mb${mb}x2.failed.txt"
    local mb2=$(( mb - 1 )) lim2=$(( 540 - $(el) )); [ "$lim2" -gt "$limit" ] && lim2=$limit
    if [ "$lim2" -ge 40 ]; then
      echo "$label: mb $mb out of memory, rerun at mb $mb2 (limit $lim2 s)" >> "$W/progress.txt"
      attempt "${label}_mb$mb2" "$lim2" "$@" --micro-batch "$mb2" --name "${stem}_mb${mb2}x2"
    else
      echo "$label: mb $mb out of memory, no time for mb $mb2 ($lim2 s left)" >> "$W/progress.txt"
    fi
  fi
}
ROW16="--storage-file-mib 16384 --storage-mixed-file-mib 16384"
bench 16g_1 200 $ROW16
row sto 120 20 h200x2_ref-infinity-storage_L24-h1024 --mode infinity --gpus 2 --storage-dir /tmp/refstore \
  --layers 24 --hidden 1024 --heads 16 --grad-accum 2 --steps 3 --warmup 1 --storage-probe-chunks 43
row host 150 9 h200x2_ref-infinity_L32-h2560 --mode infinity --gpus 2 --layers 32 --hidden 2560 --heads 20 \
  --grad-accum 2 --steps 4 --warmup 1
lim=$(( 480 - $(el) )); [ "$lim" -gt 200 ] && lim=200
if [ "$lim" -ge 130 ]; then
  bench 16g_2 "$lim" $ROW16
else
  echo "bench 16g_2 skipped: $lim s left" >> "$W/progress.txt"
fi
echo "total $(el)s" >> "$W/progress.txt"
