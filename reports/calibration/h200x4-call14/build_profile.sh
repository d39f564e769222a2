#!/bin/bash
# Builds the profile that validation call 14's rows are costed on
# (reports/validation/measured/call14-h200x4/h200x4-call14.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call14/build_profile.sh /tmp/h200x4-call14.profile.json
set -eu
C=reports/calibration/h200x4-call14
python3 calibrate/scripts/host_swap_profile.py --base h200x4-measured --name h200x4-call14 \
  --description "h200x4-measured's GPU side (GEMMs, PyTorch's kernels, flash attention, NCCL and copies: 4 x NVIDIA H200, 2026-11-26) with the PyTorch host dispatch of the 4 x H200 machine (64 vCPUs) of validation call 14 (2026-11-27): the median of three launches of calibrate/scripts/torch_stack_dispatch.py --samples 41 --depths 8 24, FSDP2 offload at 2 and 4 ranks (a stack's figures apply at their rank count), interleaved with the rows' launches on that host (reports/calibration/h200x4-call14/); FSDP2 offload's host copies and CPU AdamW at 2 and 4 ranks measured on the same host before the rows (torch_offload_bench.py, one launch; the accumulating micro-batch's pageable copy and CPU add from its synchronized rounds inside a backward pass, on autograd's thread)" \
  --stacks $C/hd_1/torch_stack_dispatch_w2.json $C/hd_1/torch_stack_dispatch_w4.json \
           $C/hd_2/torch_stack_dispatch_w2.json $C/hd_2/torch_stack_dispatch_w4.json \
           $C/hd_3/torch_stack_dispatch_w2.json $C/hd_3/torch_stack_dispatch_w4.json \
  --micro reports/calibration/h200x4-call6/hd/torch_microbench.json \
  --offload $C/ob/torch_offload_bench_r2.json $C/ob/torch_offload_bench_r4.json --out "$1"
