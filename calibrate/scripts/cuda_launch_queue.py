#!/usr/bin/env python3
"""How many kernel launches a CUDA stream queues before the host's launch call blocks.

    python3 calibrate/scripts/cuda_launch_queue.py --out FILE

The GPU is held busy by one long kernel (torch.cuda._sleep); the host then launches N one-element
kernels (PyTorch's `x.add_(1)`, one kernel each, as an eager stack issues its operators) and times
every launch. While the driver's queue has room a launch returns in microseconds; once it is full,
each launch waits for a queued kernel to finish, so the launch times jump from microseconds to
about the time one queued kernel takes. The index of the first such launch is the queue's depth
(in launches of this kind): a host that runs that far ahead of its GPU is held back to the GPU's
pace. Repeated --samples times; also with a CUDA event recorded after every kernel (an eager
stack's streams record events too), which may take queue entries of their own.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

SLEEP_CYCLES = 4_000_000_000  # ~2 s at the H200's ~1.98 GHz: far longer than the launches below
LAUNCHES = 4096
BLOCKED_S = 200e-6  # a launch this long waited for the queue (free launches take ~5-10 us)


def one(events, x):
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    times = []
    for _ in range(LAUNCHES):
        t0 = time.perf_counter()
        x.add_(1)
        if events:
            torch.cuda.Event().record()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    first = next((i for i, t in enumerate(times) if t > BLOCKED_S), None)
    after = times[first + 1:first + 201] if first is not None else []
    return {"first_blocked_launch": first, "free_launch_median_us": statistics.median(times[:first or LAUNCHES]) * 1e6,
            "blocked_launch_median_us": statistics.median(after) * 1e6 if after else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=3)
    a = ap.parse_args()
    x = torch.zeros(1, device="cuda")
    one(False, x)  # warm-up: the add kernel loaded, the allocator primed
    doc = {"schema_version": 1, "kind": "trainsim.cuda_launch_queue",
           "provenance": {"script": "calibrate/scripts/cuda_launch_queue.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda},
           "launches": LAUNCHES, "blocked_threshold_us": BLOCKED_S * 1e6,
           "kernels_only": [one(False, x) for _ in range(a.samples)],
           "kernel_and_event": [one(True, x) for _ in range(a.samples)]}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps({k: doc[k] for k in ("kernels_only", "kernel_and_event")}), flush=True)


if __name__ == "__main__":
    main()
