#!/usr/bin/env bash
# Branch ckpt-host, as run (call 1 of this branch; the only one): the folder devrun-ckpt/ (untracked
# in /work/main, removed after) held this script, build-ref/trainsim-calibrate and
# build-ref/tests/calibrate/calibrate_gpu_test built from commit ec52930 (--checkpoints host),
# stripped (sha256 9bbc1b2f...5a1ed2 and 3d2e7543...9bc707, in call1/env.txt). The run tool's command was
#   export NCCL_NVLS_ENABLE=0; OUT=$OUT bash devrun-ckpt/run.sh
# with kind nvidia-h200-x2, needs_h200 true, timeout_s 500. What came: 2 x NVIDIA H200 (143771 MiB
# each), driver 580.159.04, CUDA 13.0; the script ran 45.4 s (wall_s), rc 0; 535 s held with the
# machine's start, given back right after. One file came back, $OUT/ckpt.tar.gz (sha256
# de807d9e...133ae), kept as it came in call1/ckpt.tar.gz (it holds the baselines' JSONs, which are
# not rows: GPU checkpoints, the committed rows' flags, on this machine); call1/ holds its text
# files unpacked; the two rows' JSONs are in h200x2/ byte for byte (call1/runs.sha256), check.json
# is check/h200x2_check_ckpthost_call1.json.
# (The file below the header is the script as sent, its first line, the shebang, dropped.)
# Branch ckpt-host (issue 11: activation checkpoints in host memory). One device call on one
# 2-GPU machine: the check suite (host checkpoints against GPU ones, exact), the gpu tests of the
# reference, then ZeRO-3 rows with --recompute layer --checkpoints host at the size of the committed
# checkpoint row (L24-h1024 mb4x2) and at L40-h5120 mb1x2, each beside the same flags with GPU
# checkpoints on the same machine (baselines: printed lines and JSONs under baseline/, not rows).
# Everything is written under $W and packed into ONE file, $OUT/ckpt.tar.gz, on every exit path.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0
D=$(pwd)
BIN=$D/trainsim-calibrate
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
W=/tmp/ckpt
rm -rf "$W"; mkdir -p "$W/runs" "$W/baseline"
pack() {
  trap - EXIT TERM INT
  echo "packed at $(el)s" >> "$W/progress.txt"
  tar -C /tmp -czf "$OUT/ckpt.tar.gz" ckpt 2>> "$OUT/pack_errors.txt"
  [ -s "$OUT/pack_errors.txt" ] || rm -f "$OUT/pack_errors.txt"
}
trap pack EXIT
trap 'echo "signal at $(el)s" >> "$W/progress.txt"; exit 143' TERM INT
{ date -u; hostname; cat /etc/machine-id; nvidia-smi -L; nvidia-smi;
  nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6; nvidia-smi topo -m;
  nproc; free -g; df -h / /tmp; uname -r; sha256sum "$BIN" "$D/calibrate_gpu_test"; } > "$W/env.txt" 2>&1
# The gpu tests run the binary at the path compiled into them: point that path at the carried one.
mkdir -p /work/reference/build-ref 2>/dev/null && ln -sf "$BIN" /work/reference/build-ref/trainsim-calibrate 2>/dev/null
timeout 150 "$BIN" reference --check --gpus 2 --out "$W/check" > "$W/check.txt" 2>&1
echo "check rc=$? $(el)s" >> "$W/progress.txt"
timeout 100 "$D/calibrate_gpu_test" --gtest_filter='ReferenceGpu.*' > "$W/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(el)s" >> "$W/progress.txt"
# row LABEL TIMEOUT DIR [reference flags]
row() {
  local label=$1 limit=$2 dir=$3; shift 3
  timeout "$limit" "$BIN" reference "$@" --out "$W/$dir" > "$W/run_$label.txt" 2>&1
  echo "row rc=$? $(el)s (limit $limit s)" >> "$W/run_$label.txt"
  echo "$label done $(el)s" >> "$W/progress.txt"
}
S="--mode zero3 --gpus 2 --layers 24 --hidden 1024 --heads 16 --micro-batch 4 --grad-accum 2 --steps 8 --warmup 2 --recompute layer"
row L24_host 90 runs $S --checkpoints host --name h200x2_ref-zero3-ckpthost_L24-h1024_mb4x2
row L24_gpu 90 baseline $S --name h200x2_ref-zero3-ckpt_L24-h1024_mb4x2
B="--mode zero3 --gpus 2 --layers 40 --hidden 5120 --heads 40 --micro-batch 1 --grad-accum 2 --steps 6 --warmup 2 --recompute layer"
row L40_host 170 runs $B --checkpoints host --name h200x2_ref-zero3-ckpthost_L40-h5120_mb1x2
lim=$(( 470 - $(el) )); [ "$lim" -gt 170 ] && lim=170
if [ "$lim" -ge 60 ]; then
  row L40_gpu "$lim" baseline $B --name h200x2_ref-zero3-ckpt_L40-h5120_mb1x2
else
  echo "L40_gpu skipped: $lim s left" >> "$W/progress.txt"
fi
echo "total $(el)s" >> "$W/progress.txt"
