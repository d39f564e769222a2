# As run by the lead after merging ckpt-host (main 0570c1f): run tool, kind nvidia-h200-x2, needs_h200,
# timeout 450 s; command: export NCCL_NVLS_ENABLE=0; OUT=$OUT bash devrun-gpu/run.sh (devrun-gpu/ held this
# script and the stripped build/trainsim-calibrate and build/tests/calibrate/calibrate_gpu_test; removed after).
# What came: 2 x NVIDIA H200; 61.4 s run; 97 s of device time counted. All 5 gpu tests passed, among them
# ReferenceGpu.HostCheckpointsRunMovesEveryLayerInputOutAndBack as fixed after call 1 (loss at 1e-5).
#!/usr/bin/env bash
# Lead, after merging ckpt-host: the gpu-labelled tests (calibrate_gpu_test, all of them) with
# main's binaries of 0570c1f, on 2 x H200; one tar back.
set -u
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/gputest; rm -rf "$W"; mkdir -p "$W"
pack() { trap - EXIT; tar -C /tmp -czf "$OUT/gputest.tar.gz" gputest; }
trap pack EXIT
{ date -u; nvidia-smi -L; nvidia-smi -q | grep -iE "product name|driver version|cuda version" | head -6; nproc;
  sha256sum "$D/trainsim-calibrate" "$D/calibrate_gpu_test"; pwd; } > "$W/env.txt" 2>&1
# The tests run trainsim-calibrate at the path compiled into them.
P=$(strings "$D/calibrate_gpu_test" | grep -E '^/work/main/build/trainsim-calibrate$' | head -1)
[ -n "$P" ] && mkdir -p "$(dirname "$P")" && ln -sf "$D/trainsim-calibrate" "$P"
echo "binary path: ${P:-none}" >> "$W/env.txt"
cd "$W" && timeout 400 "$D/calibrate_gpu_test" > "$W/gpu_test.txt" 2>&1
echo "rc=$?" >> "$W/gpu_test.txt"
tail -25 "$W/gpu_test.txt"
