#!/bin/bash
# Compute beside communication inside training steps, and the GPU's gaps between queued kernels, on a
# 4-GPU machine (results: reports/calibration/step-interference/). Phases, in the order given:
#   steps4  DDP, FSDP2 ZeRO-2 and ZeRO-3 steps of three GPT widths no validation row has (hidden 2048,
#           3072 and 8192; 12, 8 and 4 layers; micro-batch 1, 2 micro-batches, sequence 2048) on 4 ranks,
#           rank 0's profiler trace of one step each (reports/validation/scripts/run_step.py)
#   steps2  the same on 2 ranks (GPUs 0-1)
#   gap     calibrate/scripts/kernel_gap_probe.py on GPU 0
# Then calibrate/scripts/step_interference.py over the traces, each trace cut to its kernels
# (step_interference.py reads nothing else), and everything packed into $OUT/interference.tgz (one
# file: the device tool returns at most 8).
#   OUT=$OUT REQUIRE_GPU=H200 bash calibrate/scripts/device_step_interference.sh steps4 steps2 gap
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
VAL=$HERE/../../reports/validation/scripts
OUT=${OUT:-/tmp/interference_out}
R=${R:-/tmp/interference_runs}
source "$VAL/device_lib.sh"
HERE=$VAL   # run_plans finds run_step.py beside device_lib.sh
begin
require_gpu
plan() {  # plan NAME_PREFIX: the nine configurations
  local p=$1 sep=""
  echo "["
  for stack in ddp fsdp2-zero2 fsdp2-zero3; do
    for shape in "12 2048 16" "8 3072 24" "4 8192 64"; do
      set -- $shape
      echo "$sep{\"stack\": \"$stack\", \"layers\": $1, \"hidden\": $2, \"heads\": $3, \"micro_batch\": 1, \"grad_accum\": 2, \"steps\": 3, \"warmup\": 2, \"name\": \"${p}_${stack}_L$1-h$2_mb1x2\"}"
      sep=","
    done
  done
  echo "]"
}
for ph in "$@"; do
  stamp "$ph"
  case $ph in
    steps4) d=$R/steps4; mkdir -p "$d"; plan interference4 >"$d/plan4.json"; run_plans "$d" 120 ;;
    steps2) d=$R/steps2; mkdir -p "$d"; plan interference2 >"$d/plan2.json"; run_plans "$d" 120 ;;
    gap) CUDA_VISIBLE_DEVICES=0 python3 "$HERE/../../../calibrate/scripts/kernel_gap_probe.py" --out "$R/kernel_gap_probe.json" ;;
  esac
done
stamp analyze
CAL=$(cd "$VAL/../../../calibrate/scripts" && pwd)
python3 - "$R" <<'PY'
import glob, gzip, json, sys
for p in sorted(glob.glob(sys.argv[1] + "/*/*.trace.json.gz")):
    with gzip.open(p, "rt") as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    keep = [{"ph": "X", "cat": "kernel", "name": e["name"], "ts": e["ts"], "dur": e["dur"],
             "args": {k: e["args"][k] for k in ("device", "stream", "grid", "block") if k in e.get("args", {})}}
            for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    with gzip.open(p.replace(".trace.json.gz", ".kernels.json.gz"), "wt") as f:
        json.dump({"traceEvents": keep}, f)
PY
python3 "$CAL/step_interference.py" "$R"/*/*.kernels.json.gz --json "$R/step_interference.json" | tee "$R/step_interference.md"
stamp end
rm -f "$OUT/interference.tgz"
(cd "$R" && tar czf "$OUT/interference.tgz" --exclude='*.trace.json.gz' .)
ls -la "$OUT"
