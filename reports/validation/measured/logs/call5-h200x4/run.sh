#!/bin/bash
# Call 5 (issue 10, "Predicted against measured"): how it ran, exactly.
#   Device tool `run`, kind nvidia-h200-x4 with needs_h200 true, timeout_s 560; what came:
#   4 x NVIDIA H200 (143771 MiB each), 64 cores, 503 GiB RAM (env.txt); 2026-11-26 21:17-21:19 UTC,
#   133.6 s of command wall time; device budget used 179 s (1427 s left before, 1248 s after the
#   machine was given back), machine start included.
#   The device tool sends /work/main's working tree; these scripts were copied, as committed on the
#   branch validate-bubble, into an untracked folder devrun-bubble/ of it (deleted afterwards):
#     reports/validation/scripts/{run_step.py,model.py,drive.py,device_call.sh,bubble_rerun4.json}
#     calibrate/scripts/{torch_stack_dispatch.py,torch_pipeline_actions.py}
#   The command, from the repository root:
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
OUT=$OUT bash devrun-bubble/device_call.sh 4b:150 hd4:100 pa4:120 4r:80
# Phases (device_call.sh):
#   4b  drive.py --gpus 4 --extra bubble_rerun4.json: the four small 4-GPU pipeline rows with the
#       bubble from CUDA events around the stage's calls over the 8 timed steps (no profiler), then
#       one profiled step each: their JSON and traces replace measured/h200x4/'s (log-4b.txt, plan-g4b.json)
#   hd4 torch_stack_dispatch.py --stacks pipe-gpipe pipe-1f1b at 4 ranks: torch.distributed.pipelining's
#       host dispatch at 4 stages (torch_stack_dispatch_w4.json; 1F1B failed: torch's Schedule1F1B
#       refuses 2 micro-batches on 4 stages, and the script's fit needs 2 and 4; log-hd4.txt)
#   pa4 torch_pipeline_actions.py --row --row-micro-batches 8 16 at 4 ranks: host time per action
#       (torch_pipeline_actions.json; the 1F1B run with 2 micro-batches failed the same way; log-pa4.txt)
#   4r  bubble_rerun4.json again in a new process group: a repeat, kept in
#       reports/validation/repeats/call5-h200x4/ (JSON only, read by nothing; log-4r.txt, plan-g4r.json)
