#!/bin/bash
# The device call that measured this folder (kind nvidia-h200-x2 with needs_h200: 2 x NVIDIA H200,
# 2026-11-26 18:49 UTC, 61 s run). It ran from the repository root with the stripped trainsim-calibrate
# binary (build with TRAINSIM_CALIBRATE_CUDA=ON) and torch_pipeline_actions.py in an untracked
# devrun-dispatch/ folder:
#   OUT=/tmp/out bash devrun-dispatch/run.sh
# A: trainsim-calibrate --quick --only host_dispatch (kernel_launch_us, gpu_kernel_us).
# B: torch_stack_dispatch.py on both GPUs (the 2-rank stacks), alone.
# C: at once, one GPU each: torch_stack_dispatch.py single (GPU 0), torch_microbench.py --parts host (GPU 1).
# D: torch_pipeline_actions.py on both GPUs (tiny model; then the L24-h1024 row model).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/reports/validation/scripts
R=/tmp/hd; mkdir -p $R/torch $R/calib
t0=$(date +%s)
{ date -u; hostname; nproc; free -g; nvidia-smi; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
} >"$R/env.txt" 2>&1
grep -m3 "H200\|H100" $R/env.txt
pack() { (cd "$R" && tar czf "$OUT/results.tgz.tmp" . && mv "$OUT/results.tgz.tmp" "$OUT/results.tgz"); }
echo "== A"
timeout 40 devrun-dispatch/trainsim-calibrate --quick --only host_dispatch --base dgx-h200 --name h200x2-measured \
  --out $R/calib >$R/calib.log 2>&1; echo "rc $?"; tail -5 $R/calib.log
pack
echo "== B $(( $(date +%s) - t0 )) s"
timeout 120 torchrun --standalone --nproc-per-node 2 calibrate/scripts/torch_stack_dispatch.py --out $R/torch >$R/stack_w2.log 2>&1
echo "rc $?"; grep "stack_dispatch\|Error" $R/stack_w2.log | tail -12
pack
echo "== C $(( $(date +%s) - t0 )) s"
( CUDA_VISIBLE_DEVICES=0 MASTER_PORT=29533 timeout 70 python3 calibrate/scripts/torch_stack_dispatch.py --out $R/torch >$R/stack_w1.log 2>&1 ) &
( CUDA_VISIBLE_DEVICES=1 timeout 70 python3 calibrate/scripts/torch_microbench.py --out $R/torch --parts host >$R/micro.log 2>&1 ) &
wait
grep -h "stack_dispatch\|torch_microbench\|Error" $R/stack_w1.log $R/micro.log | tail -8
pack
echo "== D $(( $(date +%s) - t0 )) s"
timeout 80 torchrun --standalone --nproc-per-node 2 devrun-dispatch/torch_pipeline_actions.py --out $R/torch --row >$R/pipe_actions.log 2>&1
echo "rc $?"; grep "pipeline_actions\|Error" $R/pipe_actions.log | tail -14
echo "== done $(( $(date +%s) - t0 )) s"
pack
ls -la $OUT
