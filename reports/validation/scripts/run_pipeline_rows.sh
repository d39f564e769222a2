#!/bin/bash
# The small pipelines again, 24 timed steps a launch, in three launches on one host, each after a
# launch of the pipelines' host calibration at the rows' shape.
# The four 2-stage pipelines:
#   OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh calp:1 pipes:1 calp:2 pipes:2 calp:3 pipes:3
# The four 4-stage pipelines:
#   OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh calp4:1 pipes4:1 calp4:2 pipes4:2 calp4:3 pipes4:3
#   calp:K   torch_stack_dispatch.py --samples 41 --warmup 5 --stacks pipe-gpipe pipe-1f1b
#            --pipe-layers 4 12 --pipe-micro-batches 4 8 at 2 ranks (GPUs 0-1)        -> hd_K/
#   pipes:K  drive.py --gpus 2 --small-only --stacks pipe-gpipe pipe-1f1b --steps 24 (GPUs 0-1) -> g2_K/
#   calp4:K  the same calibration at 4 ranks (4 stages), --pipe-layers 2 6 --pipe-micro-batches 8 16
#            (the 4-stage rows: 6 layers a stage, 8 and 16 micro-batches)               -> hd4_K/
#   pipes4:K drive.py --gpus 4 --small-only --stacks pipe-gpipe pipe-1f1b --steps 24   -> g4_K/
# A probe: page faults and system time inside the 2-stage pipelines'
# calls (run_step.py's stack.details.host_call_timing), the real GPT of the rows and the tiny GPT of
# the host calibration, GPipe and 1F1B, 8 micro-batches, 24 layers, 24 timed steps, no trace:
#   OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh faults:1        -> faults_1/{real,tiny}_{gpipe,1f1b}/
# A probe: the same for the 4-stage 1F1B with 16 micro-batches (4 GPUs):
#   OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh faults4:1       -> faults4_1/{real,tiny}_1f1b/
# The 4-stage and the 2-stage pipelines' commands above again, on one
# fresh 4 x H200 machine, a second host for the 4-stage and the 2-stage rows; with REQUIRE_GPU=H200
# the command stops before any phase unless GPU 0 is an H200 (device_lib.sh):
#   REQUIRE_GPU=H200 OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh calp4:1 pipes4:1 calp4:2 pipes4:2 calp4:3 pipes4:3
#   REQUIRE_GPU=H200 OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh calp:1 pipes:1 calp:2 pipes:2 calp:3 pipes:3
# A probe: rank 0's CUDA calls and the GPU's lag behind them in
# the 4-stage pipelines (1F1B and GPipe, 16 micro-batches), real and tiny GPT, CUDA-only traces of 3
# steps (run_step.py --trace-cuda-only --trace-steps 3) after 24 timed steps:
#   REQUIRE_GPU=H200 OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh trace4:1  -> trace4_1/{real,tiny}_{1f1b,gpipe}/
# A probe: the same as trace4, every rank tracing (--trace-all-ranks),
# 1F1B only:
#   REQUIRE_GPU=H200 OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh traceall4:1  -> traceall4_1/{real,tiny}_1f1b/
# or, on 2 GPUs (2 stages, 8 micro-batches): traceall2:1 -> traceall2_1/{real,tiny}_1f1b/
# A probe: the 4-stage 1F1B with 16 micro-batches on the real GPT,
# 24 timed steps, no trace, in launches alternating free and pinned (run_step.py's PIN_CPUS_PER_RANK=8:
# rank r's process and threads on CPUs 8r..8r+7):
#   OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh pin4:1 pin4:2 pin4:3  -> pin4_K/{free,pinned}/
# A probe: does stage 0's slower host follow the rank or GPU 0, does a
# launch cost more on one GPU, and do the vCPUs run at one pace (hidden hyperthread siblings)?
#   REQUIRE_GPU=H200 OUT=DIR bash reports/validation/scripts/run_pipeline_rows.sh cpumap:1 launch4:1 swap4:1 swap4:2 launch4:2
#   cpumap:K  cpu_pace.py --repeat 2 (each vCPU's pace alone and in pairs)                 -> cpumap_K/cpu_pace.json
#   launch4:K launch_cost_probe.py on GPUs 0-3 at once, one process each                   -> launch4_K/gpuG.json
#   swap4:K   the 4-stage 1F1B with 16 micro-batches, real GPT, 24 timed steps, no trace, twice: GPUs in
#             order (rank r on GPU r) and reversed (CUDA_VISIBLE_DEVICES=3,2,1,0: rank r on GPU 3 - r)
#                                                                                          -> swap4_K/{order0123,order3210}/
# Each phase's start also records /proc/stat's cpu line (steal time) in phases.txt and prints the
# steal share since the previous stamp.
# Results: $OUT/small.tgz (JSON, logs) and $OUT/traces.tar.partNN (the rows' rank-0 traces).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CAL=$HERE/../../../calibrate/scripts
OUT=${OUT:-/tmp/pipes_out}
R=${R:-/tmp/pipes}
. "$HERE/device_lib.sh"
begin
require_gpu
for ph in "$@"; do
  what=${ph%%:*}; k=${ph##*:}
  stamp "$ph"
  case $what in
    calp)
      d=$R/hd_$k; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=0,1 timeout 150 torchrun --standalone --nproc-per-node 2 "$CAL/torch_stack_dispatch.py" \
        --samples 41 --warmup 5 --stacks pipe-gpipe pipe-1f1b --pipe-layers 4 12 --pipe-micro-batches 4 8 \
        --out "$d" >"$d/stack_w2.log" 2>&1; echo "w2 rc $?"
      grep -h "stack_dispatch\]" "$d"/stack_w2.log | tr '\n' ' '; echo ;;
    pipes)
      CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --small-only --stacks pipe-gpipe pipe-1f1b \
        --steps 24 --out "$R/g2_$k" --budget-s 120 >"$R/log-g2_$k.txt" 2>&1
      grep -h "step .* s (spread" "$R/log-g2_$k.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-80 ;;
    calp4)
      d=$R/hd4_$k; mkdir -p "$d"
      timeout 200 torchrun --standalone --nproc-per-node 4 "$CAL/torch_stack_dispatch.py" \
        --samples 41 --warmup 5 --stacks pipe-gpipe pipe-1f1b --pipe-layers 2 6 --pipe-micro-batches 8 16 \
        --out "$d" >"$d/stack_w4.log" 2>&1; echo "w4 rc $?"
      grep -h "stack_dispatch\]" "$d"/stack_w4.log | tr '\n' ' '; echo ;;
    faults|faults4|trace4|traceall4|traceall2)
      gpus=2; m=8; scheds="gpipe 1f1b"; trace="--no-trace"
      [ $what = faults4 ] && { gpus=4; m=16; scheds=1f1b; }
      [ $what = trace4 ] && { gpus=4; m=16; scheds="1f1b gpipe"; trace="--trace-cuda-only --trace-steps 3"; }
      [ $what = traceall4 ] && { gpus=4; m=16; scheds=1f1b; trace="--trace-cuda-only --trace-steps 3 --trace-all-ranks"; }
      [ $what = traceall2 ] && { scheds=1f1b; trace="--trace-cuda-only --trace-steps 3 --trace-all-ranks"; }
      for size in real tiny; do
        dims="--hidden 1024 --heads 16 --vocab 50304 --seq 2048 --micro-batch 2"
        [ $size = tiny ] && dims="--hidden 64 --heads 2 --vocab 512 --seq 64 --micro-batch 1"
        for sched in $scheds; do
          d=$R/${what}_$k/${size}_$sched; mkdir -p "$d"
          CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) timeout 150 torchrun --standalone --nproc-per-node $gpus "$HERE/run_step.py" \
            --stack pipe-$sched --layers 24 $dims --micro-batches $m --steps 24 --warmup 2 $trace \
            --name probe_${size}_$sched --out "$d" >"$d/log.txt" 2>&1; echo "$size $sched rc $?"
          grep -h "step .* s (spread" "$d/log.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-80
        done
      done ;;
    pin4)
      for mode in free pinned; do
        d=$R/pin4_$k/$mode; mkdir -p "$d"
        pin=""; [ $mode = pinned ] && pin=8
        PIN_CPUS_PER_RANK=$pin timeout 150 torchrun --standalone --nproc-per-node 4 "$HERE/run_step.py" \
          --stack pipe-1f1b --layers 24 --hidden 1024 --heads 16 --vocab 50304 --seq 2048 --micro-batch 2 \
          --micro-batches 16 --steps 24 --warmup 2 --no-trace --name probe_$mode --out "$d" >"$d/log.txt" 2>&1
        echo "$mode rc $?"; grep -h "step .* s (spread" "$d/log.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-80
      done ;;
    cpumap)
      d=$R/cpumap_$k; mkdir -p "$d"
      timeout 150 python3 "$HERE/cpu_pace.py" --repeat 2 --out "$d/cpu_pace.json" >"$d/log.txt" 2>&1
      echo "cpumap rc $?"; cat "$d/log.txt" ;;
    launch4)
      d=$R/launch4_$k; mkdir -p "$d"
      for g in 0 1 2 3; do
        CUDA_VISIBLE_DEVICES=$g timeout 120 python3 "$CAL/launch_cost_probe.py" --out "$d/gpu$g.json" >"$d/log_gpu$g.txt" 2>&1 &
      done
      wait
      for g in 0 1 2 3; do echo "GPU $g: $(grep mix_of_20 "$d/log_gpu$g.txt")"; done ;;
    swap4)
      for order in 0123 3210; do
        d=$R/swap4_$k/order$order; mkdir -p "$d"
        CUDA_VISIBLE_DEVICES=$(echo $order | sed 's/./&,/g; s/,$//') timeout 150 torchrun --standalone --nproc-per-node 4 \
          "$HERE/run_step.py" --stack pipe-1f1b --layers 24 --hidden 1024 --heads 16 --vocab 50304 --seq 2048 \
          --micro-batch 2 --micro-batches 16 --steps 24 --warmup 2 --no-trace --name probe_order$order --out "$d" \
          >"$d/log.txt" 2>&1
        echo "order $order rc $?"; grep -h "step .* s (spread" "$d/log.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-80
      done ;;
    pipes4)
      python3 "$HERE/drive.py" --gpus 4 --small-only --stacks pipe-gpipe pipe-1f1b \
        --steps 24 --out "$R/g4_$k" --budget-s 150 >"$R/log-g4_$k.txt" 2>&1
      grep -h "step .* s (spread" "$R/log-g4_$k.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-80 ;;
  esac
  pack
done
stamp "end of command"
pack
ls -la "$OUT"
