#!/bin/bash
# Does a configuration's step depend on what ran before it in the same process group? drive.py runs
# the small configurations of one GPU count in one process group, the 2-stage pipelines right after
# FSDP2 CPU offload; the 2-stage pipelines are the rows the replay under-predicts most (issue 10).
# On one machine (GPUs 0-1), interleaved:
#   alone:K   the four small 2-stage pipelines in a fresh process group (order_probe_pipes.json)
#   after:K   FSDP2 offload, then the same four in its process group (order_probe_after_offload.json)
#   plan:K    the whole small 2-GPU plan as the rows ran it (drive.py --small-only)
#   OUT=DIR bash reports/validation/scripts/probe_order.sh alone:1 after:1 plan:1 alone:2 after:2
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/order_out}
R=/tmp/order
. "$HERE/device_lib.sh"
mkdir -p "$R" "$OUT"
t0=$(date +%s)
[ -f "$R/env.txt" ] || { date -u; hostname; nproc; lscpu; nvidia-smi; } >"$R/env.txt" 2>&1
grep -m1 "Model name" "$R/env.txt"; nvidia-smi -L | head -1
for ph in "$@"; do
  what=${ph%%:*}; k=${ph##*:}
  stamp "$ph"
  case $what in
    alone) extra=(--extra "$HERE/order_probe_pipes.json") ;;
    after) extra=(--extra "$HERE/order_probe_after_offload.json") ;;
    plan) extra=(--small-only) ;;
  esac
  CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 "${extra[@]}" --out "$R/${what}_$k" --budget-s 150 \
    >"$R/log-${what}_$k.txt" 2>&1
  grep -h "step .* s (spread" "$R/log-${what}_$k.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-70
  pack
done
stamp "end of command"
pack
ls -la "$OUT"
