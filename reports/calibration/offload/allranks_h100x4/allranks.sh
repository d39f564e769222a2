#!/bin/bash
# Diagnostic, not a calibration: the two 0.36 B FSDP2 offload configurations of reports/validation
# rerun with reports/validation/scripts/run_step.py patched to write every rank's profiler trace
# (the committed runs trace rank 0 only). Run from a folder holding copies of run_step.py and
# model.py; OUT as in a device call.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 - <<'PY'
s = open("run_step.py").read()
s = s.replace("        if RANK == 0:\n            from torch.profiler import ProfilerActivity, profile",
              "        if True:\n            from torch.profiler import ProfilerActivity, profile")
s = s.replace('raw = os.path.join(out, f"{name}.trace.json")', 'raw = os.path.join(out, f"{name}.rank{RANK}.trace.json")')
open("run_step.py", "w").write(s)
PY
R=/tmp/allranks; mkdir -p $R
common="--stack fsdp2-offload --layers 24 --hidden 1024 --heads 16 --vocab 50304 --seq 2048 --micro-batch 4 --grad-accum 2 --steps 4 --warmup 2"
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 200 torchrun --standalone --nproc-per-node 4 run_step.py $common --name x4_L24 --out $R
CUDA_VISIBLE_DEVICES=0,1 timeout 200 torchrun --standalone --nproc-per-node 2 run_step.py $common --name x2_L24 --out $R
(cd $R && tar czf $OUT/allranks.tgz .)
