#!/bin/bash
# Builds the profile that validation call 7's rows are costed on
# (reports/validation/measured/call7-h200x2/h200x2-call7.profile.json until call 9's rows replaced those; in the git history), from the repository root:
#   bash reports/calibration/h200x2-call7/build_profile.sh /tmp/h200x2-call7.profile.json
set -eu
C=reports/calibration/h200x2-call7
H=reports/calibration/h200x2/host_dispatch/torch
python3 calibrate/scripts/host_swap_profile.py --base h200x4-measured --name h200x2-call7 \
  --description "h200x4-measured's GPU side (GEMMs, PyTorch's kernels, flash attention, NCCL and copies: 4 x NVIDIA H200, 2026-11-26) with the PyTorch host dispatch of the 2 x H200 machine (32 cores) of validation call 7 (2026-11-27): the median of three launches of calibrate/scripts/torch_stack_dispatch.py --samples 41 at 1 and 2 ranks, interleaved with the rows' launches on that host (reports/calibration/h200x2-call7/); pipelines split by the forward share measured on a 2 x H200 machine (reports/calibration/h200x2/host_dispatch/); FSDP2 offload's host copies and CPU AdamW still the 4-GPU host's (64 cores; call 7 did not measure them)" \
  --stacks $C/hd_1/torch_stack_dispatch_w1.json $C/hd_1/torch_stack_dispatch_w2.json \
           $C/hd_2/torch_stack_dispatch_w1.json $C/hd_2/torch_stack_dispatch_w2.json \
           $C/hd_3/torch_stack_dispatch_w1.json $C/hd_3/torch_stack_dispatch_w2.json \
  --micro $H/torch_microbench.json --pipeline-actions $H/torch_pipeline_actions.json --out "$1"
