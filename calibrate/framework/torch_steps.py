"""GEMM rates and flash attention as a training step runs them (the torch_step_gemms part): each
product's kernel time inside steps.

A probe of GEMMs inside a step against alone (reports/HISTORY.md) ran Llama 3 8B's layer products 10%
faster inside a single-GPU training step than the same GPU ran them back to back: back to back the
products hold the GPU at its power limit and it lowers its clock (1680-1815 MHz against 1920 in the
step). A table for predicting steps has to be measured where the steps run them. This part runs short
single-GPU training steps (reports/validation/scripts/model.py's GPT and model_llama.py's decoder, two
layers each, torch.autocast bf16, cross-entropy, fused AdamW: the validation rows' single-GPU step,
flash attention through sdpa_kernel(FLASH_ATTENTION), as run_step.py runs it) over a grid of widths
and token counts, profiles two steps of each with record_shapes, and takes every matrix product's CUDA
kernel time from the profiler's trace (aten::mm and aten::addmm by their "Input Dims", their kernels by
"External id").

Records: a list of one run (sections_steps.py takes one run per GPU): {"configs": per configuration
its step time, per product shape (m, n, k: C[m x n] = A[m x k] B[k x n]) the calls, the median
kernel time and TFLOP/s with the cuBLAS kernels it ran, and flash attention's forward and backward
kernel time per call (median) and TFLOP/s; "errors": the configurations that failed}.
"""
import collections
import json
import os
import statistics
import tempfile
import time

import torch

from . import validation_models

SEQ = 2048
# (arch, hidden, heads, kv heads, ffn, vocab): the measured GPT's widths and wider (heads of 64 at
# hidden 1024, of 128 above, as the validation rows), Llama 3 8B's and 70B's layers.
ARCHS = [("gpt", h, h // 64 if h == 1024 else h // 128, 0, 4 * h, 50304) for h in (1024, 2560, 4096, 5120, 6144, 8192, 12288)]
ARCHS += [("llama", 4096, 32, 8, 14336, 128256), ("llama", 8192, 64, 8, 28672, 128256)]
MICRO_BATCHES = (1, 2, 4)  # 2048, 4096 and 8192 tokens a step


def product_shape(name, dims):
    """(m, n, k) of an aten::mm ([m, k], [k, n]) or aten::addmm (bias, [m, k], [k, n]) call."""
    mats = [d for d in dims if len(d) == 2]
    if name not in ("aten::mm", "aten::addmm") or len(mats) != 2 or mats[0][1] != mats[1][0]:
        return None
    return mats[0][0], mats[1][1], mats[0][1]


def products_of(trace_path):
    doc = json.load(open(trace_path))
    ops = {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op" and e["name"] in ("aten::mm", "aten::addmm"):
            shape = product_shape(e["name"], e.get("args", {}).get("Input Dims", []))
            if shape is not None:
                ops[e["args"]["External id"]] = shape
    per_call = collections.defaultdict(float)
    kernels = collections.defaultdict(set)
    for e in doc["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        ext = e.get("args", {}).get("External id")
        if ext in ops:
            per_call[ext] += e["dur"] * 1e-6
            kernels[ops[ext]].add(e["name"].split("(")[0][:80])
    by_shape = collections.defaultdict(list)
    for ext, seconds in per_call.items():
        by_shape[ops[ext]].append(seconds)
    return by_shape, kernels


def flash_of(trace_path):
    """Flash attention's kernel time per call, forward and backward (a backward's three kernels, the
    dot(dO, O) pre-pass, the dQ/dK/dV loop and the dQ conversion, summed by the op that launched them)."""
    doc = json.load(open(trace_path))
    calls = {"forward": collections.defaultdict(float), "backward": collections.defaultdict(float)}
    for e in doc["traceEvents"]:
        if e.get("cat") != "kernel" or "flash" not in e["name"]:
            continue
        kind = "backward" if "flash_bwd" in e["name"] else "forward" if "flash_fwd" in e["name"] else None
        if kind:
            calls[kind][e.get("args", {}).get("External id")] += e["dur"] * 1e-6
    return {k: sorted(v.values()) for k, v in calls.items()}


def one_config(arch, hidden, heads, kv, ffn, vocab, b, dev, tmp):
    validation_models.on_path()
    from model import build_model, init_weights, loss_fn
    cfg = {"arch": arch, "layers": 2, "hidden": hidden, "heads": heads, "kv_heads": kv or heads, "ffn_hidden": ffn,
           "vocab": vocab, "seq": SEQ}
    with torch.device(dev):  # built on the GPU: initialising billions of parameters on the CPU takes long
        model = build_model(cfg)
    init_weights(model, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randint(0, vocab, (b, SEQ), device=dev)
    y = torch.randint(0, vocab, (b, SEQ), device=dev)

    from torch.nn.attention import SDPBackend, sdpa_kernel

    def step():
        # Flash attention, as the validation rows run it (run_step.py): SDPA's default backend on an
        # H200 picks another kernel, and the steps would hold no flash kernel to time.
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION), torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    step_s = (time.perf_counter() - t0) / 3
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        for _ in range(2):
            step()
        torch.cuda.synchronize()
    path = os.path.join(tmp, "trace.json")
    prof.export_chrome_trace(path)
    by_shape, kernels = products_of(path)
    flash = flash_of(path)
    os.remove(path)
    del model, opt, x, y
    torch.cuda.empty_cache()
    rows = []
    for (m, n, k), secs in sorted(by_shape.items()):
        med = statistics.median(secs)
        rows.append({"m": m, "n": n, "k": k, "calls": len(secs), "median_s": med, "min_s": min(secs), "max_s": max(secs),
                     "TFLOPs": 2.0 * m * n * k / med / 1e12, "kernels": sorted(kernels[(m, n, k)])})
    # FlashAttention-2's count: forward 4 b a s^2 d halved by the causal mask, backward 2.5 times that.
    d = hidden // heads
    flops_f = 4.0 * b * heads * SEQ * SEQ * d / 2
    attention = {"batch_heads": b * heads, "kv_heads": kv or heads, "seq": SEQ, "head_dim": d, "causal": True,
                 "calls": {k: len(v) for k, v in flash.items()}}
    if flash["forward"] and flash["backward"]:
        fm, bm = statistics.median(flash["forward"]), statistics.median(flash["backward"])
        attention.update({"forward_s": fm, "backward_s": bm, "forward_TFLOPs": flops_f / fm / 1e12,
                          "backward_TFLOPs": 2.5 * flops_f / bm / 1e12})
    return {"arch": arch, "hidden": hidden, "heads": heads, "kv_heads": kv or heads, "ffn_hidden": ffn, "vocab": vocab,
            "layers": 2, "micro_batch": b, "seq": SEQ, "step_s": step_s, "products": rows, "attention": attention}



def grid(sizes):
    """`sizes` widths, the measured rows' first (the GPT at hidden 1024, Llama 3 8B's layer), each at
    every micro-batch count."""
    order = sorted(ARCHS, key=lambda a: (a != ARCHS[0], a[0] != "llama" or a[1] != 4096))
    return [(a, b) for a in order[:sizes] for b in MICRO_BATCHES]


def step_gemms(dev, sizes=len(ARCHS), progress=lambda done, total: None):
    run = {"configs": [], "errors": []}
    configs = grid(sizes)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (a, b) in enumerate(configs):
            progress(i, len(configs))
            try:
                run["configs"].append(one_config(*a, b, dev, tmp))
            except Exception as e:  # noqa: BLE001 - keep the other configurations; sections refuses the run
                run["errors"].append({"config": list(a) + [b], "error": f"{type(e).__name__}: {e}"})
                torch.cuda.empty_cache()
    return [run]
