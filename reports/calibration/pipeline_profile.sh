#!/bin/bash
# The recipe of the pipelines' host profiles of validation calls 12, 13, 32 and 33 (each call's
# build_profile.sh calls it with its own figures): h200x4-measured's GPU side with the pipelines'
# host dispatch of the call's machine (the median of its three torch_stack_dispatch.py launches),
# split by the forward share measured at 4 stages in validation call 5. From the repository root:
#   bash reports/calibration/pipeline_profile.sh CALL DATE SHAPE DIR/STACK_JSON_PREFIX OUT
# CALL: the call's number; DATE: its date; SHAPE: the calibration's arguments and ranks as the
# description states them; STACK_JSON_PREFIX: the launches' JSONs without _1/ .. _3/ and their file
# (e.g. reports/calibration/h200x4-call13/hd4 for hd4_1/torch_stack_dispatch_w4.json), the file name
# from the ranks (w4 or w2) in SHAPE's "at N ranks".
set -eu
call=$1 date=$2 shape=$3 prefix=$4 out=$5
w=$(echo "$shape" | sed -n 's/.* at \([0-9]*\) ranks.*/\1/p')
python3 calibrate/scripts/host_swap_profile.py --base h200x4-measured --name h200x4-call$call \
  --description "h200x4-measured's GPU side (GEMMs, PyTorch's kernels, flash attention, NCCL and copies: 4 x NVIDIA H200, 2026-11-26) with the PyTorch pipelines' host dispatch of the 4 x H200 machine (64 vCPUs) of validation call $call ($date): the median of three launches of calibrate/scripts/torch_stack_dispatch.py --samples 41 --stacks pipe-gpipe pipe-1f1b $shape, each before a launch of the rows on that host (reports/calibration/h200x4-call$call/); pipelines split by the forward share measured at 4 stages on a 4 x H200 machine (validation call 5)" \
  --stacks ${prefix}_1/torch_stack_dispatch_w$w.json ${prefix}_2/torch_stack_dispatch_w$w.json ${prefix}_3/torch_stack_dispatch_w$w.json \
  --micro reports/calibration/h200x4-call6/hd/torch_microbench.json \
  --pipeline-actions reports/validation/measured/logs/call5-h200x4/torch_pipeline_actions.json --out "$out"
