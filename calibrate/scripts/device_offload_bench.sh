#!/bin/bash
# torch_offload_bench.py on a four-GPU machine: 1, 2 and 4 ranks at
# once, the two-rank phase on GPUs 0 and 1 as the validation runs had it, then the host's facts.
#   OUT=DIR bash calibrate/scripts/device_offload_bench.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/offload_out}
mkdir -p "$OUT"
{
  date -u; hostname; nproc; free -g; lscpu; numactl -H 2>/dev/null; nvidia-smi -L; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  ldd --version | head -1
} >"$OUT/offload_env.txt" 2>&1
for n in 1 2 4; do
  case $n in 1) vis=0 ;; 2) vis=0,1 ;; 4) vis=0,1,2,3 ;; esac
  CUDA_VISIBLE_DEVICES=$vis timeout 150 torchrun --standalone --nproc-per-node $n "$HERE/torch_offload_bench.py" \
    --out "$OUT/torch_offload_bench_r$n.json" 2>&1 | grep -v "^W" | tail -n 20
done
ls -la "$OUT"
