#!/bin/bash
# Builds the profile that validation call 32's rows are costed on
# (reports/validation/measured/call32-h200x4/h200x4-call32.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call32/build_profile.sh /tmp/h200x4-call32.profile.json
# The recipe of call 13's profile (reports/calibration/h200x4-call13/build_profile.sh), this host's figures.
set -eu
C=reports/calibration/h200x4-call32
python3 calibrate/scripts/host_swap_profile.py --base h200x4-measured --name h200x4-call32 \
  --description "h200x4-measured's GPU side (GEMMs, PyTorch's kernels, flash attention, NCCL and copies: 4 x NVIDIA H200, 2026-11-26) with the PyTorch pipelines' host dispatch of the 4 x H200 machine (64 vCPUs) of validation call 32 (2026-11-28): the median of three launches of calibrate/scripts/torch_stack_dispatch.py --samples 41 --stacks pipe-gpipe pipe-1f1b --pipe-layers 2 6 --pipe-micro-batches 8 16 at 4 ranks (4 stages, the rows' shape), each before a launch of the rows on that host (reports/calibration/h200x4-call32/); pipelines split by the forward share measured at 4 stages on a 4 x H200 machine (validation call 5)" \
  --stacks $C/hd4_1/torch_stack_dispatch_w4.json $C/hd4_2/torch_stack_dispatch_w4.json $C/hd4_3/torch_stack_dispatch_w4.json \
  --micro reports/calibration/h200x4-call6/hd/torch_microbench.json \
  --pipeline-actions reports/validation/measured/logs/call5-h200x4/torch_pipeline_actions.json --out "$1"
