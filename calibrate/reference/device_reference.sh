#!/bin/bash
# The reference step on a GPU machine (run from the repository root there, with the stripped
# binaries beside this script, carried in .device-carry/reference/): the gpu tests, the check suite
# on every GPU, then the measured runs named in RUNS. Everything lands under $OUT; each command has
# a timeout so one hang cannot eat the machine's time.
set -u
export NCCL_NVLS_ENABLE=0
D=$(cd "$(dirname "$0")" && pwd); B=$D/trainsim-calibrate
FINAL=${OUT:-/tmp/out}
# Only a few files come back from the GPU machine: work in /tmp/ref-out and send one archive.
OUT=/tmp/ref-out
rm -rf "$OUT"; mkdir -p "$OUT/runs" "$OUT/logs" "$FINAL"
NGPU=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi; nvidia-smi topo -m; nproc; free -g; } > "$OUT/logs/env.txt" 2>&1
# The gpu test runs the binary at the path compiled into it: point that path at the carried one.
mkdir -p /work/reference/build-ref 2>/dev/null && ln -sf "$B" /work/reference/build-ref/trainsim-calibrate 2>/dev/null
t0=$(date +%s)
timeout 150 "$B" reference --check --gpus "$NGPU" --out "$OUT/check" > "$OUT/logs/check.txt" 2>&1; echo "check rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/logs/summary.txt"
timeout 120 "$D/calibrate_gpu_test" --gtest_filter='Reference*' > "$OUT/logs/gpu_test.txt" 2>&1; echo "gpu_test rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/logs/summary.txt"
while read -r limit args; do
  [ -z "$limit" ] && continue
  timeout "$limit" "$B" reference $args --out "$OUT/runs" >> "$OUT/logs/runs.txt" 2>&1
  echo "rc=$? $(( $(date +%s) - t0 ))s: $args" >> "$OUT/logs/summary.txt"
done <<< "${RUNS:-}"
tar czf "$FINAL/ref-out.tgz" -C "$OUT" .
cat "$OUT/logs/summary.txt"; tail -n 30 "$OUT/logs/runs.txt"; grep -n "passed\|error" "$OUT/check/check.json" 2>/dev/null
