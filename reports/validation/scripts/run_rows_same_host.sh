#!/bin/bash
# One device call (a four-GPU machine) that measures the host-bound class of the validation rows
# (the ~350M size of every configuration) three times in fresh process groups, and between the
# first and the second launch calibrates that same host's PyTorch-side host figures, so that these
# rows are replayed with the host they ran on:
#   OUT=DIR bash reports/validation/scripts/run_rows_same_host.sh
# Phases (each writes under /tmp/samehost, packed after each into $OUT/small.tgz, JSON and logs, and
# $OUT/traces.tar.partNN, the profiler traces in 12 MB parts):
#   launch 1  drive.py --small-only at 1 GPU (GPU 0), 2 GPUs (GPUs 0-1) and 4 GPUs -> g{1,2,4}_1/
#   hd        calibrate/scripts/torch_stack_dispatch.py at 2 ranks (GPUs 0-1, alone), then at 1
#             (GPU 0) beside torch_microbench.py --parts host (GPU 1)                -> hd/
#   ob        calibrate/scripts/torch_offload_bench.py at 2 ranks (GPUs 0-1) and 4  -> ob/
#   launch 2, launch 3  as launch 1                                                 -> g{1,2,4}_{2,3}/
# Nothing else runs beside a phase: the rows and the calibration are host-bound, and a neighbour
# would slow them.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CAL=$HERE/../../../calibrate/scripts
OUT=${OUT:-/tmp/samehost_out}
R=/tmp/samehost
. "$HERE/device_lib.sh"
mkdir -p "$R/hd" "$R/ob" "$OUT"
t0=$(date +%s)
{
  date -u; hostname; nproc; free -g; lscpu; nvidia-smi; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
} >"$R/env.txt" 2>&1
grep -m1 "Model name" "$R/env.txt"; nvidia-smi -L
launch() {
  k=$1
  stamp "launch $k"
  CUDA_VISIBLE_DEVICES=0 python3 "$HERE/drive.py" --gpus 1 --small-only --out "$R/g1_$k" --budget-s 40 >"$R/log-g1_$k.txt" 2>&1
  CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --small-only --out "$R/g2_$k" --budget-s 110 >"$R/log-g2_$k.txt" 2>&1
  python3 "$HERE/drive.py" --gpus 4 --small-only --out "$R/g4_$k" --budget-s 100 >"$R/log-g4_$k.txt" 2>&1
  grep -h "step .* s (spread" "$R"/log-g?_$k.txt | grep "rank 0" | sed 's/.*\] //'
  pack
}
launch 1
stamp "hd"
CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc-per-node 2 "$CAL/torch_stack_dispatch.py" \
  --out "$R/hd" >"$R/hd/stack_w2.log" 2>&1
echo "w2 rc $?"
( CUDA_VISIBLE_DEVICES=0 MASTER_PORT=29533 timeout 70 python3 "$CAL/torch_stack_dispatch.py" --out "$R/hd" \
    >"$R/hd/stack_w1.log" 2>&1; echo "w1 rc $?" ) &
( CUDA_VISIBLE_DEVICES=1 timeout 70 python3 "$CAL/torch_microbench.py" --out "$R/hd" --parts host \
    >"$R/hd/micro.log" 2>&1; echo "micro rc $?" ) &
wait
pack
stamp "ob"
for n in 2 4; do
  case $n in 2) vis=0,1 ;; 4) vis=0,1,2,3 ;; esac
  CUDA_VISIBLE_DEVICES=$vis timeout 90 torchrun --standalone --nproc-per-node $n "$CAL/torch_offload_bench.py" \
    --out "$R/ob/torch_offload_bench_r$n.json" >"$R/ob/bench_r$n.log" 2>&1
  echo "ob r$n rc $?"
done
pack
launch 2
launch 3
stamp "done"
pack
ls -la "$OUT"
