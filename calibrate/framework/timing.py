"""How the framework parts time things: medians of repeated samples after warm-up, with min and max.

Only the measurement modules import this (it needs torch with CUDA); planning and the profile
sections do not.
"""
import os
import statistics
import sys
import time

import torch

BF16, FP32 = torch.bfloat16, torch.float32


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "samples": len(xs)}


def provenance(script, dev, **extra):
    """Where and with what a PyTorch calibration ran (the provenance object of its output)."""
    return {"script": script, "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": os.uname().nodename, "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "cuda": torch.version.cuda, **extra}


def cuda_time(fn, reps=10, samples=5, warmup=3):
    """Seconds per call of fn (GPU time, CUDA events), median of samples of reps calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3 / reps)
    return out
