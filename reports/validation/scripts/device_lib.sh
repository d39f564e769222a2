# What the validation device scripts share (sourced by run_rows_same_host.sh, run_rows_with_host_calibration.sh,
# run_offload_rows.sh and run_pipeline_rows.sh, which set R, the work folder, and OUT, the device
# tool's folder, first): NCCL's settings for the lent machines, the machine's description, phase
# stamps with the CPU's steal, and packing the results so that the tool takes them back (JSON and
# logs in small.tgz; the profiler traces apart, in 12 MB parts: one 54 MB file was refused).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
pack() {
  rm -f "$OUT"/small.tgz "$OUT"/traces.tar.part*
  (cd "$R" && tar czf "$OUT/small.tgz" --exclude='*.trace.json.gz' .)
  (cd "$R" && find . -name '*.trace.json.gz' | sort | tar cf - -T - | split -b 12000000 -d - "$OUT/traces.tar.part")
}
# A phase's start (or a command's end) in phases.txt, with /proc/stat's cpu line: the steal time
# between two stamps is what the hypervisor took from these virtual machines.
# It also prints the steal share since the previous stamp, steal / (user + nice + system + irq +
# softirq + steal) as run_step.py records it, so that a plan's rule on a quiet host can be read at once,
# and leaves it in steal_pct (empty for the first stamp).
stamp() {
  local now; now=$(grep "^cpu " /proc/stat)
  local said=""
  steal_pct=""
  if [ -n "${last_cpu:-}" ]; then
    steal_pct=$(printf '%s\n%s\n' "$last_cpu" "$now" | awk '{u=$2+$3+$4+$7+$8+$9; s=$9}
      NR==1 {u0=u; s0=s} NR==2 && u>u0 && s>=s0 {printf "%.2f", 100*(s-s0)/(u-u0)}')
    [ -n "$steal_pct" ] && said=" steal since the last stamp $steal_pct%"
  fi
  echo "== $1 $(date -u +%T) ($(( $(date +%s) - t0 )) s)$said" | tee -a "$R/phases.txt"
  echo "$now" >>"$R/phases.txt"
  last_cpu=$now
}
# One launch of a small pipeline row for the probes (probe_gc.sh, probe_clocks.sh), 24 timed steps, no trace, into
# DIR/log.txt: p4, 1F1B on 4 stages with 16 micro-batches of 2 (4 GPUs); p2, GPipe on 2 stages with
# 8 (GPUs 0-1). Usage: probe_pipeline p4|p2 DIR NAME (NAME: the run's name in its JSON).
probe_pipeline() {
  local what=$1 d=$2 name=$3 gpus=4 stack=pipe-1f1b m=16
  if [ "$what" = p2 ]; then gpus=2; stack=pipe-gpipe; m=8; fi
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) timeout 200 torchrun --standalone --nproc-per-node $gpus \
    "$HERE/run_step.py" --stack $stack --layers 24 --hidden 1024 --heads 16 --micro-batch 2 --micro-batches $m \
    --steps 24 --warmup 2 --no-trace --name "$name" --out "$d" >"$d/log.txt" 2>&1
  echo "$what rc $?"
}
# With REQUIRE_GPU set, stop the command (exit 3) unless GPU 0's name contains it: a call planned for
# one GPU model does not spend its time on another (the H200 kinds sometimes bring H100s).
require_gpu() {
  if [ -n "${REQUIRE_GPU:-}" ] && ! nvidia-smi -L | head -1 | grep -q "$REQUIRE_GPU"; then
    echo "GPU 0 is not a $REQUIRE_GPU: stopping before any phase"; stamp "stopped: not $REQUIRE_GPU"; pack; exit 3
  fi
}
# The work and result folders, the command's start time, and the machine in env.txt (once a machine).
begin() {
  mkdir -p "$R" "$OUT"
  t0=$(date +%s)
  if [ ! -f "$R/env.txt" ]; then
    {
      date -u; hostname; nproc; free -g; lscpu; nvidia-smi; nvidia-smi topo -m; nvidia-smi -L
      python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
    } >"$R/env.txt" 2>&1
  fi
  grep -m1 "Model name" "$R/env.txt"; nvidia-smi -L | head -1; hostname
}
# run_plans DIR LIMIT: each of DIR/plan1.json, plan2.json, plan4.json that exists, on that many GPUs
# (GPUs 0 .. n-1, through torchrun, the whole plan within 100 s per GPU plus 100), into DIR/logN.txt;
# each configuration may take LIMIT seconds; then what stepped. (HERE: the scripts' folder.)
run_plans() {
  local d=$1 limit=$2 n
  for n in 1 2 4; do
    [ -f "$d/plan$n.json" ] || continue
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout $((100 * n + 100)) torchrun --standalone --nproc-per-node $n \
      "$HERE/run_step.py" --plan "$d/plan$n.json" --time-limit "$limit" --out "$d" >"$d/log$n.txt" 2>&1
    echo "$(basename "$d") $n GPU(s) rc $?"
  done
  grep -h "step .* s (spread" "$d"/log*.txt; grep -h "FAILED" "$d"/log*.txt
}
