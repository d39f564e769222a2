#!/bin/bash
# Builds the profile that validation call 33's rows are costed on
# (reports/validation/measured/call33-h200x4/h200x4-call33.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call33/build_profile.sh /tmp/h200x4-call33.profile.json
# The recipe of call 12's profile (reports/calibration/h200x4-call12/build_profile.sh), this host's figures.
set -eu
C=reports/calibration/h200x4-call33
python3 calibrate/scripts/host_swap_profile.py --base h200x4-measured --name h200x4-call33 \
  --description "h200x4-measured's GPU side (GEMMs, PyTorch's kernels, flash attention, NCCL and copies: 4 x NVIDIA H200, 2026-11-26) with the PyTorch pipelines' host dispatch of the 4 x H200 machine (64 vCPUs) of validation call 33 (2026-11-28): the median of three launches of calibrate/scripts/torch_stack_dispatch.py --samples 41 --stacks pipe-gpipe pipe-1f1b --pipe-layers 4 12 --pipe-micro-batches 4 8 at 2 ranks (GPUs 0-1, the rows' shape), each before a launch of the rows on that host (reports/calibration/h200x4-call33/); pipelines split by the forward share measured at 4 stages on a 4 x H200 machine (validation call 5)" \
  --stacks $C/hd_1/torch_stack_dispatch_w2.json $C/hd_2/torch_stack_dispatch_w2.json $C/hd_3/torch_stack_dispatch_w2.json \
  --micro reports/calibration/h200x4-call6/hd/torch_microbench.json \
  --pipeline-actions reports/validation/measured/logs/call5-h200x4/torch_pipeline_actions.json --out "$1"
