#!/bin/bash
# Call 6 (issue 10, "Predicted against measured"): how it ran, exactly.
#   Device tool `run`, kind nvidia-h200-x4 (needs_h200 not set; 4 x NVIDIA H200 came, 64 cores,
#   503 GiB RAM: env.txt), 2026-11-27 13:15-13:24 UTC, two commands on the same held machine.
#   Device budget: 1800 s before, 1185 s after the machine was given back (615 s, start included).
#
# Command 1 (423.9 s), from the repository root of the working tree at that moment
# (reports/validation/scripts/device_call_samehost.sh as committed at 47b5895, whose CAL path then
# pointed at reports/calibrate/scripts, so the hd and ob phases failed at once, "can't open file",
# and whose pack wrote one results.tgz; both fixed since):
export NCCL_NVLS_ENABLE=0; OUT=$OUT bash reports/validation/scripts/device_call_samehost.sh
#   Ran: launch 1 (13:15:47), launch 2 (13:18:20), launch 3 (13:20:45) of the 17 small
#   configurations (drive.py --small-only at 1, 2 and 4 GPUs); phases.txt has the times.
#   Its results.tgz (54 MB, profiler traces) was over the tool's size limit and did not come back.
#
# Command 2 (103.9 s, 14 s after command 1 ended, same machine, /tmp/samehost still there): the
# hd and ob phases with the corrected path, after the three launches (not between launches 1 and 2
# as the script orders them), then the results packed small (JSON and logs) and the traces split:
R=/tmp/samehost; CAL=$PWD/calibrate/scripts
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
CUDA_VISIBLE_DEVICES=0,1 timeout 120 torchrun --standalone --nproc-per-node 2 $CAL/torch_stack_dispatch.py --out $R/hd >$R/hd/stack_w2.log 2>&1
( CUDA_VISIBLE_DEVICES=0 MASTER_PORT=29533 timeout 70 python3 $CAL/torch_stack_dispatch.py --out $R/hd >$R/hd/stack_w1.log 2>&1 ) &
( CUDA_VISIBLE_DEVICES=1 timeout 70 python3 $CAL/torch_microbench.py --out $R/hd --parts host >$R/hd/micro.log 2>&1 ) &
wait
for n in 2 4; do
  case $n in 2) vis=0,1 ;; 4) vis=0,1,2,3 ;; esac
  CUDA_VISIBLE_DEVICES=$vis timeout 90 torchrun --standalone --nproc-per-node $n $CAL/torch_offload_bench.py \
    --out $R/ob/torch_offload_bench_r$n.json >$R/ob/bench_r$n.log 2>&1
done
cd $R && tar czf $OUT/small.tgz --exclude='*.trace.json.gz' . && mkdir -p /tmp/tr \
  && tar cf /tmp/tr/traces.tar $(find . -name '*.trace.json.gz') && cd /tmp/tr && split -b 12000000 -d traces.tar $OUT/traces.tar.part
#
# Here: tar xzf small.tgz -C /tmp/c6; cat traces.tar.part0* | tar x -C /tmp/c6, then
#   python3 reports/validation/scripts/collect.py --launches call6-h200x4 /tmp/c6
# and the hd/ and ob/ folders copied to reports/calibration/h200x4-call6/.
