#!/usr/bin/env bash
# One GPU session of issue 39's measured runs (README.md beside this file): the measured runs of
# runs.py one after another, each in a fresh process with a time limit, while the captures of the
# same runs (and trainsim_capture.hf_zoo) run on other CPU cores in the background; then a summary
# table and everything packed into $OUT.
#
#   OUT=$OUT bash reports/validation/captured_models/device_session.sh            # the GPU machine
#   OUT=/tmp/x bash reports/validation/captured_models/device_session.sh --dry-run  # here: CPU, torch 1.13
#
# Writes only $OUT/captured_models.tar.gz and $OUT/session.log (and, only if the archive would pass
# 15.5 MB, $OUT/captures.tar.gz and $OUT/zoo.tar.gz, split into 15 MB parts where needed). Works in a
# fresh temporary folder it removes at the end; earlier results in $OUT are replaced, so a rerun starts
# clean. Time: nothing new starts after SESSION_BUDGET_S (default 495 s) from the start (a measured run
# only with MIN_START_S = 40 s of it left); each measured run is killed at RUN_TIMEOUT_S (default 120 s)
# or at that budget, whichever comes first; the captures stop at the budget too; stopping them, the
# summary and the packing take 5-20 s more, so the session ends within about 8.7 minutes.
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 2  # the repository root
HERE=reports/validation/captured_models
MEASURE=$HERE/measure.py
DRY=0
for a in "$@"; do
  case $a in
    --dry-run) DRY=1 ;;
    *) echo "usage: OUT=DIR bash $HERE/device_session.sh [--dry-run]" >&2; exit 2 ;;
  esac
done
: "${OUT:?set OUT to the folder that receives captured_models.tar.gz and session.log}"
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1

if [ $DRY = 1 ]; then
  PY=${PYTHON:-/usr/bin/python3}; DRYFLAG=--dry-run
  BUDGET=${SESSION_BUDGET_S:-300}; RUN_LIMIT=${RUN_TIMEOUT_S:-20}; MIN_START=${MIN_START_S:-5}
else
  PY=${PYTHON:-python3}; DRYFLAG=
  BUDGET=${SESSION_BUDGET_S:-495}; RUN_LIMIT=${RUN_TIMEOUT_S:-120}; MIN_START=${MIN_START_S:-40}
fi
T0=$(date +%s)
END=$((T0 + BUDGET))

# a clean start: this script's earlier outputs in $OUT go, the work happens in a fresh folder
rm -f "$OUT/captured_models.tar.gz" "$OUT"/captures.tar.gz* "$OUT"/zoo.tar.gz* "$OUT/session.log"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/captured_models.XXXXXX") || exit 2
STAGE=$WORK/captured_models
mkdir -p "$STAGE/runs" "$STAGE/captures"
exec > >(tee -a "$OUT/session.log") 2>&1
TEE_PID=$!

elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[+$(elapsed)s] $*"; }

# CPUs: the measured runs on a quarter of them (whole cores: a CPU's hyperthread siblings go with it),
# the captures on the others
NCPU=$(nproc 2>/dev/null || echo 1)
RUN_PIN=(); CAP_PIN=()
if command -v taskset >/dev/null 2>&1 && [ "$NCPU" -ge 8 ]; then
  read -r RUN_CPUS CAP_CPUS < <("$PY" - <<'EOF'
import os
cpus = sorted(os.sched_getaffinity(0))
def siblings(c):
    try:
        text = open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list").read().strip()
    except OSError:
        return {c}
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out
run = set()
for c in cpus:
    if len(run) >= max(1, len(cpus) // 4):
        break
    run |= siblings(c) & set(cpus)
cap = [c for c in cpus if c not in run]
print(",".join(map(str, sorted(run))), ",".join(map(str, cap)))
EOF
)
  if [ -n "${RUN_CPUS:-}" ] && [ -n "${CAP_CPUS:-}" ]; then
    RUN_PIN=(taskset -c "$RUN_CPUS")
    CAP_PIN=(taskset -c "$CAP_CPUS")
  fi
  NCAP=$NCPU
  [ -n "${CAP_CPUS:-}" ] && NCAP=$(echo "$CAP_CPUS" | tr ',' '\n' | wc -l)
  CAP_JOBS=${CAPTURE_JOBS:-$(( NCAP < 8 ? NCAP : 8 ))}
else
  CAP_JOBS=${CAPTURE_JOBS:-$(( NCPU > 1 ? NCPU : 1 ))}
fi

CAP_PID=
FINISHED=0
finish() {
  [ $FINISHED = 1 ] && return
  FINISHED=1
  if [ -n "$CAP_PID" ] && kill -0 "$CAP_PID" 2>/dev/null; then
    say "captures: stopping what still runs (session budget)"
    kill -TERM "$CAP_PID" 2>/dev/null
    for _ in 1 2 3 4 5; do kill -0 "$CAP_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL "$CAP_PID" 2>/dev/null
  fi
  say "summary"
  "$PY" "$MEASURE" summary "$STAGE" || say "summary failed"
  if [ $DRY = 0 ]; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,memory.used --format=csv \
      > "$STAGE/gpu_after.csv" 2>&1
  fi
  say "packing (session total $(elapsed) s)"
  cp "$OUT/session.log" "$STAGE/session.log" 2>/dev/null
  local limit=${PACK_LIMIT_BYTES:-16252928}  # 15.5 MB: each returned file must stay under 16 MB
  tar -C "$WORK" -czf "$OUT/captured_models.tar.gz" captured_models
  if [ "$(stat -c %s "$OUT/captured_models.tar.gz")" -gt $limit ]; then
    say "archive over 15.5 MB: the captures go in archives of their own"
    tar -C "$WORK" -czf "$OUT/captured_models.tar.gz" --exclude=captured_models/captures \
      --exclude=captured_models/zoo captured_models
    for part in captures zoo; do
      [ -d "$STAGE/$part" ] || continue
      tar -C "$WORK" -czf "$OUT/$part.tar.gz" "captured_models/$part"
      if [ "$(stat -c %s "$OUT/$part.tar.gz")" -gt $limit ]; then
        split -b 15000000 -d -a 1 "$OUT/$part.tar.gz" "$OUT/$part.tar.gz.part"
        rm -f "$OUT/$part.tar.gz"
      fi
    done
  fi
  ls -l "$OUT"
  say "done: $OUT/captured_models.tar.gz (tar -xzf it; captured_models/runs holds the measured runs)"
  rm -rf "$WORK"
}
trap 'finish; exec 1>&- 2>&-; wait $TEE_PID 2>/dev/null' EXIT
trap 'say "interrupted"; exit 130' INT TERM

# ---- header and environment ----------------------------------------------------------------------
"$PY" - "$DRY" "$NCPU" <<'EOF'
import os, platform, socket, sys
from importlib.metadata import version
def v(n):
    try:
        return version(n)
    except Exception:
        return "absent"
import torch
dry = sys.argv[1] == "1"
if torch.cuda.is_available() and not dry:
    p = torch.cuda.get_device_properties(0)
    gpu = f"{torch.cuda.get_device_name(0)} ({p.total_memory / 2**30:.1f} GiB)"
else:
    gpu = "none (dry run on the CPU)" if dry else "NONE"
try:
    drv = open("/proc/driver/nvidia/version").readline().split("Module")[1].split()[0]
except Exception:
    drv = "-"
print(f"session: GPU {gpu}; torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {v('transformers')}, "
      f"accelerate {v('accelerate')}, driver {drv}, python {platform.python_version()}, host {socket.gethostname()}, "
      f"{sys.argv[2]} CPUs", flush=True)
EOF
say "budget ${BUDGET} s (nothing new starts after it), ${RUN_LIMIT} s per measured run, captures: $CAP_JOBS jobs" \
  "${CAP_PIN[*]:-(no pinning)}, measured runs ${RUN_PIN[*]:-(no pinning)}"
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(hostname)"; echo "nproc: $NCPU"
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit,memory.total --format=csv
  free -g; lscpu 2>/dev/null | head -25
  "$PY" -m pip list 2>/dev/null | grep -iE '^(torch|transformers|accelerate|numpy|triton|safetensors|nvidia-cu)' 
  env | grep -E '^(CUDA|NCCL|TORCH|PYTORCH|OMP)' | sort
} > "$STAGE/env.txt" 2>&1

# ---- the runs' configs and capture commands ------------------------------------------------------
say "prepare"
"$PY" "$MEASURE" prepare "$STAGE/runs" "$STAGE/captures" $DRYFLAG || say "prepare FAILED (the runs go on; those without a config fail)"

# ---- captures in the background (CPU only: fake tensors) -----------------------------------------
# A capture's fake CUDA tensors open a CUDA context (a few hundred MB of the GPU each); a GPU that
# allows one process only (compute mode other than Default) gets its captures after the runs instead.
ZOO=--zoo; [ $DRY = 1 ] && ZOO=
CAPTURES_AFTER=0
if [ $DRY = 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
  mode=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | head -1)
  if [ -n "$mode" ] && [ "$mode" != "Default" ]; then
    CAPTURES_AFTER=1
    say "GPU compute mode $mode: the captures run after the measured runs"
  fi
fi
start_captures() {
  "${CAP_PIN[@]}" nice -n 10 "$PY" "$MEASURE" captures "$STAGE" --deadline "$END" --jobs "$CAP_JOBS" $ZOO \
    > "$STAGE/captures.log" 2>&1 &
  CAP_PID=$!
  say "captures started in the background (log: captures.log)"
}
# NO_CAPTURES=1: measure only (the captures are hardware-independent; a session on another GPU kind
# reuses the committed ones)
[ "${NO_CAPTURES:-0}" = 1 ] && rm -f "$STAGE/runs/captures.json"
if [ -f "$STAGE/runs/captures.json" ] && [ $CAPTURES_AFTER = 0 ]; then
  start_captures
fi

# ---- the measured runs, one process each ---------------------------------------------------------
mapfile -t NAMES < <("$PY" "$MEASURE" list $DRYFLAG)
# ONLY_RUNS=a,b: measure only these (a later session completing an earlier one); captures stay all
if [ -n "${ONLY_RUNS:-}" ]; then
  KEEP=()
  for name in "${NAMES[@]}"; do case ",$ONLY_RUNS," in *",$name,"*) KEEP+=("$name") ;; esac; done
  NAMES=("${KEEP[@]}")
fi
say "${#NAMES[@]} measured runs"
i=0
for name in "${NAMES[@]}"; do
  i=$((i + 1))
  left=$((END - $(date +%s)))
  if [ $left -lt "$MIN_START" ]; then
    "$PY" "$MEASURE" fail "$name" "$STAGE/runs" --reason budget $DRYFLAG
    say "run $i/${#NAMES[@]} $name: not started (${left} s of the budget left)"
    continue
  fi
  limit=$(( left < RUN_LIMIT ? left : RUN_LIMIT ))
  log="$STAGE/runs/$name.log"
  t_run=$(date +%s)
  # STEP_PROFILES=1: each run then profiles one more step's kernels and memory (step_profile.py)
  PROFILE=()
  [ "${STEP_PROFILES:-0}" = 1 ] && mkdir -p "$STAGE/profiles" && PROFILE=(--step-profile "$STAGE/profiles/$name.json")
  "${RUN_PIN[@]}" timeout -k 10 "$limit" "$PY" "$MEASURE" run "$name" "$STAGE/runs" $DRYFLAG "${PROFILE[@]}" > "$log" 2>&1
  rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    "$PY" "$MEASURE" fail "$name" "$STAGE/runs" --reason timeout --log "$log" --limit-s "$limit" $DRYFLAG
    say "run $i/${#NAMES[@]} $name: TIMEOUT after ${limit} s"
    continue
  fi
  if [ ! -f "$STAGE/runs/$name.json" ] && [ ! -f "$STAGE/runs/$name.failed.json" ]; then
    "$PY" "$MEASURE" fail "$name" "$STAGE/runs" --reason crash --log "$log" $DRYFLAG
  fi
  line=$(grep -E "^$name: " "$log" | tail -1)
  say "run $i/${#NAMES[@]} (exit $rc, $(( $(date +%s) - t_run )) s) ${line:-$name: no result line (see runs/$name.log)}"
done

# ---- wait for the captures (until the budget), then finish (trap) ---------------------------------
if [ -f "$STAGE/runs/captures.json" ] && [ $CAPTURES_AFTER = 1 ]; then
  start_captures
fi
if [ -n "$CAP_PID" ]; then
  say "measured runs done; waiting for the captures"
  while kill -0 "$CAP_PID" 2>/dev/null && [ "$(date +%s)" -lt "$END" ]; do sleep 2; done
  grep -E '^captures:' "$STAGE/captures.log" | tail -3
fi
exit 0
