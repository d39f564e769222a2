#!/bin/bash
# A probe read by nothing: Python's
# garbage-collection pauses inside the timed steps of two host-bound small pipelines, recorded by
# run_step.py's GcPauses (stack.details.python_gc), in two launches each on one host:
#   OUT=DIR bash reports/validation/scripts/probe_gc.sh p4:1 p2:1 p4:2 p2:2
#   p4:K  run_step.py, 1F1B, 4 stages, 16 micro-batches of 2, 24 timed steps (4 GPUs)   -> p4_K/
#   p2:K  run_step.py, GPipe, 2 stages, 8 micro-batches of 2, 24 timed steps (GPUs 0-1) -> p2_K/
# (the rows h200x4_pipe-1f1b_L24-h1024_mb2x16 and h200x2_pipe-gpipe_L24-h1024_mb2x8, no trace).
# Results: $OUT/small.tgz (JSON, logs).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gc_out}
R=${R:-/tmp/gcprobe}
. "$HERE/device_lib.sh"
begin
for ph in "$@"; do
  what=${ph%%:*}; k=${ph##*:}
  stamp "$ph"
  d=$R/${what}_$k; mkdir -p "$d"
  case $what in
    p4) probe_pipeline p4 "$d" h200x4_pipe-1f1b_L24-h1024_mb2x16 ;;
    p2) probe_pipeline p2 "$d" h200x2_pipe-gpipe_L24-h1024_mb2x8 ;;
  esac
  python3 - "$d" <<'PY'
import glob, json, statistics, sys
for f in glob.glob(sys.argv[1] + "/*.json"):
    if f.endswith(".model.json"):
        continue
    j = json.load(open(f))
    st = j["measured"]["step_times_s"]
    med = statistics.median(st)
    for r in j["stack"]["details"]["python_gc"]["per_rank"]:
        s = r["seconds_per_step"]
        gens = [sum(c[g] for c in r["collections_per_step"]) for g in range(3)]
        print(f"  {j['name']} rank {r['rank']}: step {med*1e3:.1f} ms, gc {statistics.mean(s)*1e3:.2f} ms a step "
              f"({100*statistics.mean(s)/med:.2f}%), max {max(s)*1e3:.1f} ms, collections by generation {gens}")
PY
  pack
done
stamp "end of command"
pack
ls -la "$OUT"
