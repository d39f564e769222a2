#!/usr/bin/env python3
"""A PyTorch layer's own kernels, timed in the layouts the layer runs them.

Which kernels and layouts, and why a contiguous bench misses them: calibrate/framework/torch_layer.py,
whose measurements this script runs.

    python3 calibrate/scripts/torch_layer_kernels.py --out DIR [--parts kernels,attention,gemm_probe]

writes DIR/torch_layer_kernels.json (schema_version 1): "kernels" in torch_microbench.json's kernel
format (name, bytes read + written, seconds, GBps_median) and "attention" in its attention format,
each figure the median of 5 samples of 10 calls after 3 warm-up calls (torch_microbench.cuda_time);
"attention_contiguous", the same shapes in torch_microbench.py's own layout in the same run, for
comparison; "gemm_probe", a layer's products timed three ways (a probe, merged into nothing).
The first two are measured by trainsim-calibrate's framework driver (calibrate/framework/torch_layer.py,
the torch_layer_kernels part), whose profile writer puts them into the profile; this script runs them
alone with the two probes, writing the layout of the committed raw run (reports/calibration/layer-kernels/).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from torch_microbench import BF16, FP32, provenance, stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.torch_layer import ATTENTION_SHAPES, attention, flash_contiguous, guarded, kernels  # noqa: E402


def attention_contiguous(dev):
    return [guarded(flash_contiguous, dev, b, a, s, d) for b, a, _, s, d in ATTENTION_SHAPES]


# A layer's products at the measured GPT's (hidden 1024, 8192 tokens) and Llama 3 8B's (hidden 4096,
# 2048 tokens) widths: (tokens, out, in) of each Linear.
GEMM_LAYERS = [(8192, 3072, 1024), (8192, 1024, 1024), (8192, 4096, 1024), (8192, 1024, 4096),
               (2048, 6144, 4096), (2048, 4096, 4096), (2048, 28672, 4096), (2048, 4096, 14336)]


def gemm_probe(dev):
    """Each Linear's forward, input-gradient and weight-gradient products timed three ways: a block of
    20 back to back (its mean, the GEMM bench's way); 20 back to back, each by its own events (the
    median); 20 each after a memory-bound add of about its length, each by its own events (the
    median). Three rounds, shapes interleaved."""
    res = {}
    filler = torch.randn(1 << 26, device=dev, dtype=FP32)
    filler2 = torch.randn(1 << 26, device=dev, dtype=FP32)
    for rnd in range(3):
        for T, out, inp in GEMM_LAYERS:
            x = torch.randn(T, inp, device=dev, dtype=BF16)
            w = torch.randn(out, inp, device=dev, dtype=BF16)
            g = torch.randn(T, out, device=dev, dtype=BF16)
            for kind, fn, flops in (("forward", lambda: F.linear(x, w), 2.0 * T * out * inp),
                                    ("input_grad", lambda: g @ w, 2.0 * T * out * inp),
                                    ("weight_grad", lambda: g.t() @ x, 2.0 * T * out * inp)):
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
                a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(20):
                    fn()
                z.record()
                z.synchronize()
                block = a.elapsed_time(z) * 1e-3 / 20
                each, between = [], []
                for dest, fill in ((each, False), (between, True)):
                    evs = []
                    for _ in range(20):
                        if fill:
                            filler.add_(filler2)
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        fn()
                        e1.record()
                        evs.append((e0, e1))
                    torch.cuda.synchronize()
                    dest.extend(e0.elapsed_time(e1) * 1e-3 for e0, e1 in evs)
                r = res.setdefault(f"{T}x{out}x{inp}:{kind}", {"tokens": T, "out": out, "in": inp, "product": kind,
                                                                "flops": flops, "block_s": [], "each_s": [], "between_s": []})
                r["block_s"].append(block)
                r["each_s"].extend(each)
                r["between_s"].extend(between)
            del x, w, g
    out = []
    for r in res.values():
        for key in ("block", "each", "between"):
            r[f"{key}_TFLOPs"] = r["flops"] / statistics.median(r[f"{key}_s"]) / 1e12
            r[f"{key}_s"] = stats(r[f"{key}_s"])
        out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="kernels,attention,attention_contiguous,gemm_probe")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    doc = {"schema_version": 1, "kind": "trainsim.torch_layer_kernels",
           "provenance": provenance("calibrate/scripts/torch_layer_kernels.py", dev),
           "errors": {}, "seconds": {}}
    parts = {"kernels": kernels, "attention": attention, "attention_contiguous": attention_contiguous,
             "gemm_probe": gemm_probe}
    for part in args.parts.split(","):
        t0 = time.time()
        try:
            doc[part] = parts[part](dev)
        except Exception as e:  # noqa: BLE001 - keep the other parts
            doc["errors"][part] = f"{type(e).__name__}: {e}"
        doc["seconds"][part] = time.time() - t0
        print(f"[torch_layer_kernels] {part}: {time.time() - t0:.1f} s", flush=True)
        torch.cuda.empty_cache()
        with open(os.path.join(args.out, "torch_layer_kernels.json"), "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
