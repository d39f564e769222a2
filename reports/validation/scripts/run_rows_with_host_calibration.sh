#!/bin/bash
# The host-bound class of the validation rows and the host calibration that predicts them, on one
# host, each in three launches (fresh processes), interleaved so that both see the host's drift:
#   OUT=DIR bash reports/validation/scripts/run_rows_with_host_calibration.sh cal:1 rows:1 cal:2     (command 1)
#   OUT=DIR bash reports/validation/scripts/run_rows_with_host_calibration.sh rows:2 cal:3 rows:3     (command 2)
# (two commands on one held machine: together they pass the device tool's 10 minutes a command).
# DEPTHS="8 24" passes --depths to torch_stack_dispatch.py (the layers the data-parallel stacks are
# calibrated at; default 2 and 8), PIPE_LAYERS="4 12" and PIPE_MICRO_BATCHES="4 8" its --pipe-layers and
# --pipe-micro-batches (the pipelines' stage depths and micro-batch counts; default 1 4 and 2 4).
# On a machine of fewer than four GPUs the 4-rank calibration and the 4-GPU rows are left out:
#   OUT=DIR bash reports/validation/scripts/run_rows_with_host_calibration.sh cal:1 rows:1 cal:2 rows:2 cal:3 rows:3
#   cal:K   calibrate/scripts/torch_stack_dispatch.py --samples 41 --warmup 5 at 2 ranks (GPUs 0-1,
#           every stack), at 4 ranks (the data-parallel stacks: torch's 1F1B refuses 2 micro-batches
#           on 4 stages) and at 1 (single, GPU 0)                                 -> hd_K/
#   rows:K  drive.py --small-only at 1 GPU (GPU 0), 2 GPUs (GPUs 0-1) and 4 GPUs  -> g{1,2,4}_K/
#   cal2:K  as cal:K without the 4-rank part (the profile's stack figures are 2-rank ones)
#   rows4:K as rows:K at 4 GPUs only                                                  -> g4_K/
# Nothing runs beside a phase: rows and calibration are host-bound. Results: $OUT/small.tgz (JSON,
# logs) and $OUT/traces.tar.partNN (the rows' profiler traces, 12 MB parts).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CAL=$HERE/../../../calibrate/scripts
OUT=${OUT:-/tmp/hostcal_out}
R=/tmp/hostcal
. "$HERE/device_lib.sh"
begin
G=$(nvidia-smi -L | grep -c "^GPU")
for ph in "$@"; do
  what=${ph%%:*}; k=${ph##*:}
  stamp "$ph"
  [ "$what" = cal2 ] && G2=1 || G2=0
  case $what in
    cal|cal2)
      d=$R/hd_$k; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=0,1 timeout 240 torchrun --standalone --nproc-per-node 2 "$CAL/torch_stack_dispatch.py" \
        --samples 41 --warmup 5 ${DEPTHS:+--depths $DEPTHS} ${PIPE_LAYERS:+--pipe-layers $PIPE_LAYERS} \
        ${PIPE_MICRO_BATCHES:+--pipe-micro-batches $PIPE_MICRO_BATCHES} --out "$d" >"$d/stack_w2.log" 2>&1; echo "w2 rc $?"
      if [ "$G" -ge 4 ] && [ "$G2" = 0 ]; then
        timeout 200 torchrun --standalone --nproc-per-node 4 "$CAL/torch_stack_dispatch.py" --samples 41 --warmup 5 \
          ${DEPTHS:+--depths $DEPTHS} --stacks ddp fsdp2-zero2 fsdp2-zero3 fsdp2-offload --out "$d" >"$d/stack_w4.log" 2>&1; echo "w4 rc $?"
      fi
      CUDA_VISIBLE_DEVICES=0 MASTER_PORT=29533 timeout 120 python3 "$CAL/torch_stack_dispatch.py" --samples 41 --warmup 5 \
        ${DEPTHS:+--depths $DEPTHS} --out "$d" >"$d/stack_w1.log" 2>&1; echo "w1 rc $?"
      grep -h "stack_dispatch\]" "$d"/stack_w*.log | tr '\n' ' '; echo ;;
    rows)
      CUDA_VISIBLE_DEVICES=0 python3 "$HERE/drive.py" --gpus 1 --small-only --out "$R/g1_$k" --budget-s 40 >"$R/log-g1_$k.txt" 2>&1
      CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --small-only --out "$R/g2_$k" --budget-s 110 >"$R/log-g2_$k.txt" 2>&1
      if [ "$G" -ge 4 ]; then
        python3 "$HERE/drive.py" --gpus 4 --small-only --out "$R/g4_$k" --budget-s 100 >"$R/log-g4_$k.txt" 2>&1
      fi
      grep -h "step .* s (spread" "$R"/log-g?_$k.txt | grep "rank 0" | sed 's/.*\] //' | cut -c1-80 ;;
    rows4)
      python3 "$HERE/drive.py" --gpus 4 --small-only --out "$R/g4_$k" --budget-s 100 >"$R/log-g4_$k.txt" 2>&1
      grep -h "step .* s (spread" "$R"/log-g4_$k.txt | grep "rank 0" | sed 's/.*\] //' | cut -c1-80 ;;
  esac
  pack  # after every phase: a command cut short still returns what it measured
done
stamp "end of command"
pack
ls -la "$OUT"
