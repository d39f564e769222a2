#!/bin/bash
# The calibration of hwprofiles/h200x4-measured.json on a four-GPU machine, from the repository root
# with the calibrate binary carried in build-carry/:
#   OUT=/tmp/out bash calibrate/scripts/device_calibrate.sh
# A: trainsim-calibrate --quick on all GPUs (with the interference and host_dispatch parts), the
#    profile h200x4-measured; if it fails, again without the interference and host_dispatch parts, and each of
#    those alone.
# B: at once, on separate GPUs: host dispatch per stack (2 ranks on GPUs 0-1; single on GPU 2) and
#    PyTorch's kernels, flash attention and per-operator host time (GPU 3).
# C: PyTorch's CPU AdamW with all cores (alone: it needs the whole host).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/vc_out}
R=/tmp/vc
B=$PWD/build-carry/trainsim-calibrate
mkdir -p "$R" "$OUT" /tmp/st
{ date -u; hostname; nproc; free -g; nvidia-smi; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
} >"$R/env.txt" 2>&1
t0=$(date +%s)
pack() { (cd "$R" && tar czf "$OUT/results.tgz.tmp" . && mv "$OUT/results.tgz.tmp" "$OUT/results.tgz"); }
echo "== A $(date +%T)"
if ! timeout 180 "$B" --quick --base dgx-h200 --name h200x4-measured --storage-dir /tmp/st --out "$R/calib" >"$R/calib.log" 2>&1; then
  echo "calibrate failed (rc $?); fallback" | tee -a "$R/calib.log"
  tail -5 "$R/calib.log"
  timeout 100 "$B" --quick --base dgx-h200 --name h200x4-measured --storage-dir /tmp/st --skip interference,host_dispatch \
    --out "$R/calib_fallback" >"$R/calib_fallback.log" 2>&1
  timeout 30 "$B" --quick --only interference --out "$R/interference" >"$R/interference.log" 2>&1
  timeout 10 "$B" --quick --only host_dispatch --out "$R/host_dispatch" >"$R/host_dispatch.log" 2>&1
fi
tail -25 "$R/calib.log"
pack
echo "== B $(date +%T) ($(( $(date +%s) - t0 )) s)"
( CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc-per-node 2 calibrate/scripts/torch_stack_dispatch.py \
    --out "$R/torch" >"$R/stack_w2.log" 2>&1 ) &
( CUDA_VISIBLE_DEVICES=2 MASTER_PORT=29533 timeout 100 python3 calibrate/scripts/torch_stack_dispatch.py --out "$R/torch" \
    >"$R/stack_w1.log" 2>&1 ) &
( CUDA_VISIBLE_DEVICES=3 timeout 120 python3 calibrate/scripts/torch_microbench.py --out "$R/torch" \
    --parts kernels,attention,host >"$R/micro.log" 2>&1 ) &
wait
pack
grep -h "stack_dispatch\|torch_microbench\|Error" "$R"/stack_w*.log "$R/micro.log" | tail -20
echo "== C $(date +%T) ($(( $(date +%s) - t0 )) s)"
mkdir -p "$R/torch_cpu"
CUDA_VISIBLE_DEVICES=3 timeout 60 python3 calibrate/scripts/torch_microbench.py --out "$R/torch_cpu" --parts cpu_adam \
  >"$R/cpu_adam.log" 2>&1
tail -3 "$R/cpu_adam.log"
echo "== done $(( $(date +%s) - t0 )) s"
pack
ls -la "$OUT"
