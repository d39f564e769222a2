"""The caching allocator's own record of one configuration (run_step.py --allocator-trace), for
trainsim's allocator model (sim/costs/caching_allocator.hpp) to be checked against.

From the moment the model is built and the cache emptied (run_step.py's build) to the end of the timed
steps, PyTorch records every request the CUDA caching allocator serves and every block it gets back
(torch.cuda.memory._record_memory_history, no stack frames). At the start the segments it holds are
taken from a snapshot (each segment's stream, size and blocks in address order: allocated or not).
Written per rank as NAME.allocator.rankR.json.gz (schema: trainsim.allocator_trace, below), beside
the measured peaks the row reports (max_memory_allocated and max_memory_reserved over the timed steps,
run_step.py) and the same over warm-up and timed steps together.

Events: action codes (ACTIONS), addresses, sizes (bytes as requested, before the allocator's rounding)
and streams (the stream's handle as PyTorch reports it), in the order the allocator saw them."""
import gzip
import json
import os

import torch

ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom"]


def start(dev):
    """Begin recording (after the build's empty_cache) and take the segments held now."""
    torch.cuda.synchronize(dev)
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=4_000_000)
    snap = torch.cuda.memory._snapshot()
    segments = []
    for s in snap["segments"]:
        if s.get("device", dev.index) != dev.index:
            continue
        segments.append({"address": s["address"], "total_size": s["total_size"], "stream": s["stream"],
                         "segment_type": s["segment_type"],
                         "blocks": [{"size": b["size"], "allocated": b["state"] == "active_allocated"}
                                    for b in s["blocks"]]})
    segments.sort(key=lambda s: s["address"])
    return {"segments_at_start": segments,
            "reserved_at_start": torch.cuda.memory_reserved(dev),
            "allocated_at_start": torch.cuda.memory_allocated(dev)}


def finish(dev, begun, name, rank, out, measured):
    """Stop recording and write NAME.allocator.rankR.json.gz; `measured`: the row's peaks."""
    torch.cuda.synchronize(dev)
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][dev.index]
    ev = {"action": [], "addr": [], "size": [], "stream": []}
    for e in trace:
        ev["action"].append(ACTIONS.index(e["action"]) if e["action"] in ACTIONS else -1)
        ev["addr"].append(e["addr"])
        ev["size"].append(e["size"])
        ev["stream"].append(e["stream"])
    doc = {"schema_version": 1, "kind": "trainsim.allocator_trace", "name": name, "rank": rank,
           "provenance": {"script": "reports/validation/scripts/run_step_allocator.py", "torch": torch.__version__,
                          "gpu": torch.cuda.get_device_name(dev),
                          "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")},
           "actions": ACTIONS, "measured": measured, **begun,
           "events_recorded": len(trace), "events": ev}
    path = os.path.join(out, f"{name}.allocator.rank{rank}.json.gz")
    with gzip.open(path + ".tmp", "wt") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)
