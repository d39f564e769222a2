#!/bin/bash
# What one device call runs: the phases given, in order, then everything packed into $OUT.
#   bash reports/validation/scripts/device_call.sh smoke:120 1:200      (a one-GPU machine)
#   bash reports/validation/scripts/device_call.sh 2:210 4:300          (a four-GPU machine: the
#        two-GPU phase runs on GPUs 0 and 1, the four-GPU phase on all four)
#   bash reports/validation/scripts/device_call.sh 2e:120 4e:180        (rerun.json's configurations)
#   bash reports/validation/scripts/device_call.sh 2b:300               (bubble_rerun.json: the 2-GPU
#        pipeline rows again, with the bubble from CUDA events over the timed steps)
# PHASE is smoke|1|2|4|2e|4e|2b, BUDGET the seconds after which drive.py starts no further configuration.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/validation_out}
R=/tmp/validation_runs
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
  esac 2>&1 | tee "$R/log-$kind.txt" | grep -v "^\[rank [1-9]" | grep -E "drive|rank 0|Error|error|FAIL" | tail -n 60
  pack
done
ls -la "$OUT"
