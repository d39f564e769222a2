#!/bin/bash
# What one device call runs: the phases given, in order, then everything packed into $OUT.
#   bash reports/validation/scripts/run_rows.sh smoke:120 1:200      (a one-GPU machine)
#   bash reports/validation/scripts/run_rows.sh 2:210 4:300          (a four-GPU machine: the
#        two-GPU phase runs on GPUs 0 and 1, the four-GPU phase on all four)
#   bash reports/validation/scripts/run_rows.sh 2e:120 4e:180        (rerun.json's configurations)
#   bash reports/validation/scripts/run_rows.sh 2b:300               (bubble_rerun.json: the 2-GPU
#        pipeline rows again, with the bubble from CUDA events over the timed steps)
#   bash reports/validation/scripts/run_rows.sh 4b:150 hd4:100 pa4:120 4r:90   (a four-GPU machine:
#        4b bubble_cuda_events4.json, the small 4-GPU pipeline rows with the bubble from CUDA events; hd4
#        calibrate/scripts/torch_stack_dispatch.py --stacks pipe-gpipe pipe-1f1b at 4 ranks (the
#        pipelining host dispatch at 4 stages); pa4 calibrate/scripts/torch_pipeline_actions.py at 4
#        ranks with --row --row-micro-batches 8 16; 4r bubble_cuda_events4.json again in a new process
#        group, into g4r/, a repeat kept as a log only)
# PHASE is smoke|1|2|4|2e|4e|2b|4b|4r|hd4|pa4, BUDGET the seconds after which drive.py starts no
# further configuration (hd4, pa4: the seconds after which the script is killed).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/validation_out}
R=/tmp/validation_runs
# The calibration scripts (hd4, pa4): calibrate/scripts, or beside this script in a devrun copy.
CAL=$HERE/../../../calibrate/scripts
[ -f "$HERE/torch_stack_dispatch.py" ] && CAL=$HERE
mkdir -p "$R" "$OUT"
{
  date -u; hostname; nproc; free -g; nvidia-smi; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
} >"$R/env.txt" 2>&1
pack() {
  rm -f "$OUT"/results.tgz*
  (cd "$R" && tar czf "$OUT/results.tgz" .)
  if [ "$(stat -c %s "$OUT/results.tgz")" -gt 15000000 ]; then
    (cd "$OUT" && split -b 15000000 -d results.tgz results.tgz.part && rm results.tgz)
  fi
}
for ph in "$@"; do
  kind=${ph%%:*}; budget=${ph##*:}
  case $kind in
    smoke) CUDA_VISIBLE_DEVICES=0 python3 "$HERE/drive.py" --smoke --out "$R/smoke" --budget-s "$budget" ;;
    1) CUDA_VISIBLE_DEVICES=0 python3 "$HERE/drive.py" --gpus 1 --out "$R/g1" --budget-s "$budget" ;;
    2) CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --out "$R/g2" --budget-s "$budget" ;;
    4) python3 "$HERE/drive.py" --gpus 4 --out "$R/g4" --budget-s "$budget" ;;
    2e) CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --extra "$HERE/rerun.json" --out "$R/g2e" --budget-s "$budget" ;;
    4e) python3 "$HERE/drive.py" --gpus 4 --extra "$HERE/rerun.json" --out "$R/g4e" --budget-s "$budget" ;;
    2b) CUDA_VISIBLE_DEVICES=0,1 python3 "$HERE/drive.py" --gpus 2 --extra "$HERE/bubble_rerun.json" --out "$R/g2b" --budget-s "$budget" ;;
    4b) python3 "$HERE/drive.py" --gpus 4 --extra "$HERE/bubble_cuda_events4.json" --out "$R/g4b" --budget-s "$budget" ;;
    4r) python3 "$HERE/drive.py" --gpus 4 --extra "$HERE/bubble_cuda_events4.json" --out "$R/g4r" --budget-s "$budget" ;;
    hd4) timeout "$budget" python3 -m torch.distributed.run --standalone --nproc-per-node 4 "$CAL/torch_stack_dispatch.py" \
           --stacks pipe-gpipe pipe-1f1b --out "$R/hd4" ;;
    pa4) timeout "$budget" python3 -m torch.distributed.run --standalone --nproc-per-node 4 "$CAL/torch_pipeline_actions.py" \
           --row --row-micro-batches 8 16 --out "$R/pa4" ;;
  esac 2>&1 | tee "$R/log-$kind.txt" | grep -v "^\[rank [1-9]" | grep -E "drive|rank 0|stack_dispatch|pipeline_actions|Error|error|FAIL" | tail -n 60
  pack
done
ls -la "$OUT"
