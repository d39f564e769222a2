#!/usr/bin/env python3
"""Strips the probes' CUDA-only profiler traces to what analyze.py reads, in place (calls 34 and 35):
every complete event ("ph": "X") of the CUDA runtime and driver calls, kernels, memsets and copies,
with its category, name, timestamps, thread and stream and the correlation that ties a launch to its
kernel; the other fields (grid and block sizes, registers, device properties, flow events) go. The
exported traces were about 2.5 times larger; the tables do not change.

    python3 reports/validation/cuda_call_probe/strip.py TRACE.json.gz ...
"""
import gzip
import json
import sys

KEEP_CATS = ("cuda_runtime", "cuda_driver", "kernel", "gpu_memset", "gpu_memcpy")


def strip(path):
    with gzip.open(path) as f:
        doc = json.load(f)
    events = []
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in KEEP_CATS:
            continue
        args = {k: e["args"][k] for k in ("correlation", "stream") if k in e.get("args", {})}
        events.append({"ph": "X", "cat": e["cat"], "name": e["name"], "pid": e.get("pid"), "tid": e.get("tid"),
                       "ts": e["ts"], "dur": e.get("dur", 0), "args": args})
    out = {"schema_note": "stripped by reports/validation/cuda_call_probe/strip.py", "traceEvents": events}
    with gzip.open(path, "wt", compresslevel=9) as f:
        json.dump(out, f, separators=(",", ":"))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        strip(p)
