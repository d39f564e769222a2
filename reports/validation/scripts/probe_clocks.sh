#!/bin/bash
# Probes read by nothing: do the GPUs' clocks, the ranks' threads waiting for a CPU (run_step.py's
# stack.details.thread_schedule), or the host's time inside or outside the compute calls
# (stack.details.host_call_timing) move with the small pipelines' slow steps? nvidia-smi samples every GPU's SM clock, power and
# throttle reasons every 20 ms while run_step.py runs the rows, which record each timed step's wall
# clock start (stack.details.step_wall_clock_starts); nothing is set on the GPUs, only read.
#   OUT=DIR bash reports/validation/scripts/probe_clocks.sh p2:1 p2:2 p4:1
#   p2:K  run_step.py, GPipe, 2 stages, 8 micro-batches of 2, 24 timed steps (GPUs 0-1) -> p2_K/
#   p4:K  run_step.py, 1F1B, 4 stages, 16 micro-batches of 2, 24 timed steps (4 GPUs)  -> p4_K/
# Results: $OUT/small.tgz (JSON, logs, clocks.csv with the machine's time zone in tz.txt).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/clocks_out}
R=${R:-/tmp/clockprobe}
. "$HERE/device_lib.sh"
begin
{ date '+%Z %z'; date -u '+%s.%N'; nvidia-smi --query-gpu=timestamp --format=csv,noheader | head -1; date -u '+%s.%N'; } >"$R/tz.txt"
nvidia-smi --query-gpu=index,timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,noheader,nounits -lms 20 >"$R/clocks.csv" 2>"$R/clocks.err" &
SMI=$!
# Why a clock is below its maximum, where this driver names it (a field some drivers lack: apart,
# so that its failure leaves the clocks above alone).
nvidia-smi --query-gpu=index,timestamp,clocks_event_reasons.active --format=csv,noheader -lms 100 \
  >"$R/reasons.csv" 2>"$R/reasons.err" &
SMI2=$!
for ph in "$@"; do
  what=${ph%%:*}; k=${ph##*:}
  stamp "$ph"
  d=$R/${what}_$k; mkdir -p "$d"
  case $what in
    p4) probe_pipeline p4 "$d" probe_pipe-1f1b_L24-h1024_mb2x16 ;;
    p2) probe_pipeline p2 "$d" probe_pipe-gpipe_L24-h1024_mb2x8 ;;
  esac
  grep -h "step .* s (spread" "$d/log.txt" | sed 's/.*\] //' | cut -c1-80
  pack
done
kill $SMI $SMI2 2>/dev/null
stamp "end of command"
wc -l "$R/clocks.csv"; head -3 "$R/clocks.csv"; cat "$R/tz.txt"
pack
ls -la "$OUT"
