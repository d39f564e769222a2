#!/bin/bash
# The FSDP2 offload rows and the
# 4-GPU data-parallel rows again, each beside the host calibration that costs it, in three launches
# on one 4-GPU host, with the offload bench that now also measures the accumulating micro-batch's
# copy and add as the step makes them (torch_offload_bench.py's `rounds`); then two probes of the
# 2-stage pipelines' host (the launch queue's depth; the GPU's lag at every compute call).
#   OUT=DIR bash reports/validation/scripts/run_offload_rows.sh ob cal:1 rows:1 cal:2 rows:2   (command 1)
#   OUT=DIR bash reports/validation/scripts/run_offload_rows.sh cal:3 rows:3 probe              (command 2)
#   ob      torch_offload_bench.py, every part (copies, adam, rounds, autograd_rounds), at 2 ranks
#           (GPUs 0-1) and 4                                                                  -> ob/
#   cal:K   torch_stack_dispatch.py --samples 41 --warmup 5 --depths 8 24: fsdp2-offload at 2 ranks
#           (GPUs 0-1), ddp, fsdp2-zero2, fsdp2-zero3, fsdp2-offload at 4                   -> hd_K/
#   rows:K  drive.py --small-only: fsdp2-offload at 2 GPUs (GPUs 0-1); ddp, fsdp2-zero2,
#           fsdp2-zero3, fsdp2-offload at 4 GPUs                                        -> g{2,4}_K/
#   probe   cuda_launch_queue.py (GPU 0); torch_pipeline_actions.py --row --row-only --lag at 2
#           ranks (GPUs 0-1), 8 micro-batches                                              -> probe/
# The offload bench directly before each launch of each offload row,
# so that every launch has a bench of its own host minutes before it:
#   OUT=DIR STACKS4=fsdp2-offload REQUIRE_GPU=H200 bash reports/validation/scripts/run_offload_rows.sh \
#     cal:1 ob2:1 rows2:1 ob4:1 rows4:1 cal:2 ob2:2 rows2:2        (command 1)
#   ... ob4:2 rows4:2 cal:3 ob2:3 rows2:3 ob4:3 rows4:3                  (command 2)
#   obN:K   torch_offload_bench.py --parts copies adam autograd_rounds at N ranks (2: GPUs 0-1)  -> ob_K/
#   rowsN:K drive.py --small-only --stacks fsdp2-offload at N GPUs (2: GPUs 0-1)           -> gN_K/
# A probe: the fused CPU AdamW over the GPT shard's own tensors
# beside the bench's sets of equal tensors, at 2 ranks (GPUs 0-1) and 4, 7 samples each:
#   OUT=DIR bash reports/validation/scripts/run_offload_rows.sh adamcheck              -> adamcheck/
# A probe: the 2-GPU offload row's configuration (GPUs 0-1), its
# opt.step() timed inside each timed step and then 5 times alone (run_step.py --optimizer-alone):
#   OUT=DIR bash reports/validation/scripts/run_offload_rows.sh optcheck:1 optcheck:2  -> optcheck_K/
# A probe: the 2-GPU offload row's configuration timed phase by phase
# on the host's clock (calibrate/scripts/offload_phase_probe.py; plain, then each torch call inside
# foreach_reduce split out), then the offload bench and the host calibration at 2 ranks that cost it:
#   OUT=DIR REQUIRE_GPU=H200 bash reports/validation/scripts/run_offload_rows.sh \
#     phase:1 phasesplit:1 ob2:1 cal2:1                                -> phase_K/, phasesplit_K/, ob_K/, hd_K/
# A probe: the same with page-fault counts, at 2 ranks as it is and with
# glibc's trimming and dynamic mmap threshold fixed (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_), and
# at 4 ranks (GPUs 0-3), then the offload bench at 4 ranks:
#   OUT=DIR REQUIRE_GPU=H200 bash reports/validation/scripts/run_offload_rows.sh \
#     phasesplit:2 phasesplitglibc:2 phasesplit4:2 ob4:2                  -> phasesplit*_K/, ob_K/
# A probe: why the accumulating copies fault (2 GPUs): the split probe
# with each copy's faults and address, again with glibc's arenas limited to one (MALLOC_ARENA_MAX=1, trimming
# and mmap threshold fixed), again under the profiler (rank 0), and the 2.65 B GPT (32 layers, hidden 2560,
# micro-batch 1) split:
#   OUT=DIR REQUIRE_GPU=H200 bash reports/validation/scripts/run_offload_rows.sh \
#     phasesplit:3 phasesplitarena:3 phasesplitprof:3 phasesplitbig:3         -> phasesplit*_K/
# A probe: the same at 4 ranks, the 0.36 B and the 2.65 B GPT:
#   OUT=DIR bash reports/validation/scripts/run_offload_rows.sh phasesplit4:4 phasesplitbig4:4
# A probe: each blocking copy's glibc chunk (mmapped for itself, or in a
# per-thread arena's heap), the 0.36 B and the 2.65 B GPT at 2 ranks (GPUs 0-1):
#   OUT=DIR bash reports/validation/scripts/run_offload_rows.sh phasesplit:5 phasesplitbig:5
# QUIET_MAX=P stops the command (exit 4) at the first stamp after a bench or rows phase that lost more
# than P% of its CPU time to the hypervisor (the offload rows' second machine: no launch after it could count).
# REQUIRE_GPU=NAME stops the command (exit 3) before any phase unless GPU 0's name contains NAME.
# STACKS4="fsdp2-offload" restricts the 4-rank calibration and the 4-GPU rows to those stacks
# (default: ddp fsdp2-zero2 fsdp2-zero3 fsdp2-offload). Each phase's start and the command's end also
# record /proc/stat's cpu line in phases.txt (steal time: the hypervisor's, on these virtual machines).
# Results: $OUT/small.tgz (JSON, logs) and $OUT/traces.tar.partNN (the rows' rank-0 traces).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CAL=$HERE/../../../calibrate/scripts
OUT=${OUT:-/tmp/offload_out}
R=/tmp/offload_rows
. "$HERE/device_lib.sh"
begin
require_gpu
STACKS4=${STACKS4:-ddp fsdp2-zero2 fsdp2-zero3 fsdp2-offload}
for ph in "$@"; do
  what=${ph%%:*}; k=${ph##*:}
  stamp "$ph"
  case ${previous:-} in ob*|rows*|phase*)
    if [ -n "${QUIET_MAX:-}" ] && awk -v s="${steal_pct:-0}" -v m="$QUIET_MAX" 'BEGIN {exit !(s > m)}'; then
      echo "$previous lost $steal_pct% > $QUIET_MAX%: stopping"; pack; exit 4
    fi ;;
  esac
  previous=$ph
  case $what in
    ob)
      mkdir -p "$R/ob"
      CUDA_VISIBLE_DEVICES=0,1 timeout 200 torchrun --standalone --nproc-per-node 2 "$CAL/torch_offload_bench.py" \
        --out "$R/ob/torch_offload_bench_r2.json" >"$R/ob/r2.log" 2>&1; echo "r2 rc $?"
      timeout 200 torchrun --standalone --nproc-per-node 4 "$CAL/torch_offload_bench.py" \
        --out "$R/ob/torch_offload_bench_r4.json" >"$R/ob/r4.log" 2>&1; echo "r4 rc $?" ;;
    phase|phasesplit|phasesplitglibc|phasesplit4|phasesplitarena|phasesplitprof|phasesplitbig|phasesplitbig4)
      d=$R/${what}_$k; mkdir -p "$d"; split=--split; n=2; env=()
      [ "$what" = phase ] && split=""
      [ "$what" = phasesplit4 ] && n=4
      [ "$what" = phasesplitbig4 ] && n=4
      [ "$what" = phasesplitprof ] && split="--split --profiler"
      case $what in phasesplitbig*) split="--split --layers 32 --hidden 2560 --heads 20 --micro-batch 1 --steps 3 --warmup 2" ;; esac
      # 32 MiB is the most glibc takes for the mmap threshold (HEAP_MAX_SIZE / 2 on 64-bit).
      [ "$what" = phasesplitglibc ] && env=(MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_MMAP_THRESHOLD_=33554432)
      [ "$what" = phasesplitarena ] && env=(MALLOC_ARENA_MAX=1 MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_MMAP_THRESHOLD_=33554432)
      env "${env[@]}" CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout 200 torchrun --standalone \
        --nproc-per-node $n "$CAL/offload_phase_probe.py" $split --out "$d" >"$d/log.txt" 2>&1
      echo "$what rc $?"; grep -h "offload_phase_probe\]" "$d/log.txt" ;;
    cal2)
      d=$R/hd_$k; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc-per-node 2 "$CAL/torch_stack_dispatch.py" \
        --samples 41 --warmup 5 --depths 8 24 --stacks fsdp2-offload --out "$d" >"$d/stack_w2.log" 2>&1; echo "w2 rc $?"
      grep -h "stack_dispatch\]" "$d"/stack_w2.log | tr '\n' ' '; echo ;;
    optcheck)
      d=$R/optcheck_$k; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=0,1 timeout 200 torchrun --standalone --nproc-per-node 2 "$HERE/run_step.py" \
        --stack fsdp2-offload --layers 24 --hidden 1024 --heads 16 --vocab 50304 --seq 2048 --micro-batch 4 \
        --grad-accum 2 --steps 8 --warmup 2 --no-trace --optimizer-alone 5 \
        --name probe_fsdp2-offload_L24-h1024_mb4x2 --out "$d" >"$d/log.txt" 2>&1; echo "optcheck rc $?" ;;
    adamcheck)
      d=$R/adamcheck; mkdir -p "$d"
      for n in 2 4; do
        CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout 200 torchrun --standalone --nproc-per-node $n \
          "$CAL/torch_offload_bench.py" --parts adam adam_model --samples 7 \
          --out "$d/torch_offload_bench_r$n.json" >"$d/r$n.log" 2>&1; echo "r$n rc $?"
      done ;;
    ob2|ob4)
      n=${what#ob}; d=$R/ob_$k; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout 200 torchrun --standalone --nproc-per-node $n \
        "$CAL/torch_offload_bench.py" --parts copies adam autograd_rounds \
        --out "$d/torch_offload_bench_r$n.json" >"$d/r$n.log" 2>&1; echo "r$n rc $?" ;;
    rows2|rows4)
      n=${what#rows}
      CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) python3 "$HERE/drive.py" --gpus $n --small-only \
        --stacks fsdp2-offload --out "$R/g${n}_$k" --budget-s 100 >"$R/log-g${n}_$k.txt" 2>&1
      grep -h "step .* s (spread" "$R/log-g${n}_$k.txt" | grep "rank 0" | sed 's/.*\] //' | cut -c1-80 ;;
    cal)
      d=$R/hd_$k; mkdir -p "$d"
      CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc-per-node 2 "$CAL/torch_stack_dispatch.py" \
        --samples 41 --warmup 5 --depths 8 24 --stacks fsdp2-offload --out "$d" >"$d/stack_w2.log" 2>&1; echo "w2 rc $?"
      timeout 200 torchrun --standalone --nproc-per-node 4 "$CAL/torch_stack_dispatch.py" --samples 41 --warmup 5 \
        --depths 8 24 --stacks $STACKS4 --out "$d" >"$d/stack_w4.log" 2>&1; echo "w4 rc $?"
      grep -h "stack_dispatch\]" "$d"/stack_w*.log | tr '\n' ' '; echo ;;
    rows)
      CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --small-only --stacks fsdp2-offload \
        --out "$R/g2_$k" --budget-s 60 >"$R/log-g2_$k.txt" 2>&1
      python3 "$HERE/drive.py" --gpus 4 --small-only --stacks $STACKS4 \
        --out "$R/g4_$k" --budget-s 100 >"$R/log-g4_$k.txt" 2>&1
      grep -h "step .* s (spread" "$R"/log-g?_$k.txt | grep "rank 0" | sed 's/.*\] //' | cut -c1-80 ;;
    probe)
      mkdir -p "$R/probe"
      CUDA_VISIBLE_DEVICES=0 timeout 60 python3 "$CAL/cuda_launch_queue.py" --out "$R/probe/cuda_launch_queue.json" \
        >"$R/probe/queue.log" 2>&1; echo "queue rc $?"; tail -c 600 "$R/probe/queue.log"; echo
      CUDA_VISIBLE_DEVICES=0,1 timeout 150 torchrun --standalone --nproc-per-node 2 "$CAL/torch_pipeline_actions.py" \
        --row --row-only --lag --row-micro-batches 8 --out "$R/probe" >"$R/probe/lag.log" 2>&1; echo "lag rc $?"
      grep "pipeline_actions\]" "$R/probe/lag.log" ;;
  esac
  pack  # after every phase: a command cut short still returns what it measured
done
stamp "end of command"
pack
ls -la "$OUT"
