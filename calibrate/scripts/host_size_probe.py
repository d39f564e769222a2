#!/usr/bin/env python3
"""Does a stack's host time per step depend on the model's size? The host dispatch of
torch_stack_dispatch.py is measured on a tiny GPT (hidden 64, sequence 64, micro-batch 1), whose
kernels are shorter than their launches, and trainsim charges it to the real model's layers. This
probe times the host side of the same step at the same depth on the tiny GPT and on the validation
rows' 0.36 B GPT (hidden 1024, sequence 2048, micro-batch 4), with CPU timers only (no profiler,
no CUDA events): per micro-batch, the wall time of the forward and loss call and of backward() until
each returns (the host issuing kernels; the GPU is not waited for), and the step's wall time after
the optimizer and a synchronize.

  torchrun --standalone --nproc-per-node 2 calibrate/scripts/host_size_probe.py --out DIR

writes DIR/host_size_probe_w<ranks>.json (rank 0; every figure the slowest rank's, median over the
timed steps). Stacks: ddp, fsdp2-zero2, fsdp2-zero3 (as reports/validation/scripts/run_step.py
builds them), 24 layers, 2 micro-batches a step.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reports", "validation", "scripts"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import run_step  # noqa: E402
import run_step_stacks  # noqa: E402
from model import loss_fn  # noqa: E402

SIZES = {"tiny": dict(hidden=64, heads=2, vocab=512, seq=64, micro_batch=1),
         "real": dict(hidden=1024, heads=16, vocab=50304, seq=2048, micro_batch=4)}
LAYERS, MICRO_BATCHES = 24, 2


def slowest(values):
    t = torch.tensor(values, device=run_step.DEV, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def probe(stack, size, steps, warmup):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    s = SIZES[size]
    cfg = dict(s, stack=stack, layers=LAYERS)
    model, _ = run_step_stacks.build_dp(cfg, run_step.DEV, run_step.LOCAL_RANK)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    g = torch.Generator(device=run_step.DEV)
    g.manual_seed(7)
    xs = [torch.randint(0, s["vocab"], (s["micro_batch"], s["seq"]), device=run_step.DEV, generator=g)
          for _ in range(MICRO_BATCHES)]
    ys = [torch.randint(0, s["vocab"], (s["micro_batch"], s["seq"]), device=run_step.DEV, generator=g)
          for _ in range(MICRO_BATCHES)]
    autocast = stack == "ddp"
    fwd, bwd, opt_host, step = [], [], [], []
    for i in range(warmup + steps):
        dist.barrier(device_ids=[run_step.LOCAL_RANK])
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f = b = 0.0
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for m in range(MICRO_BATCHES):
                ctx = model.no_sync() if stack == "ddp" and m < MICRO_BATCHES - 1 else contextlib.nullcontext()
                with ctx:
                    a = time.perf_counter()
                    if autocast:
                        with torch.autocast("cuda", dtype=torch.bfloat16):
                            loss = loss_fn(model(xs[m]), ys[m]) / MICRO_BATCHES
                    else:
                        loss = loss_fn(model(xs[m]), ys[m]) / MICRO_BATCHES
                    c = time.perf_counter()
                    loss.backward()
                    d = time.perf_counter()
                f += c - a
                b += d - c
        a = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        o = time.perf_counter() - a
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
        if i >= warmup:
            fwd.append(f)
            bwd.append(b)
            opt_host.append(o)
            step.append(total)
    out = {}
    for name, v in (("forward_host_s", fwd), ("backward_host_s", bwd), ("optimizer_host_s", opt_host), ("step_s", step)):
        v = slowest(v)
        out[name] = {"median": statistics.median(v), "min": min(v), "max": max(v)}
    out["host_s"] = out["forward_host_s"]["median"] + out["backward_host_s"]["median"] + out["optimizer_host_s"]["median"]
    del model, opt
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--stacks", nargs="+", default=["ddp", "fsdp2-zero2", "fsdp2-zero3"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    run_step.setup()
    world = dist.get_world_size()
    doc = {"schema_version": 1, "kind": "trainsim.host_size_probe", "world_size": world, "layers": LAYERS,
           "micro_batches": MICRO_BATCHES, "sizes": SIZES, "steps": args.steps, "warmup": args.warmup,
           "provenance": {"script": "calibrate/scripts/host_size_probe.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(run_step.DEV), "torch": torch.__version__,
                          "threads_per_rank": torch.get_num_threads()},
           "runs": {}, "errors": {}}
    path = os.path.join(args.out, f"host_size_probe_w{world}.json")
    for stack in args.stacks:
        for size in ("tiny", "real"):
            t0 = time.time()
            try:
                doc["runs"][f"{stack}/{size}"] = probe(stack, size, args.steps, args.warmup)
            except Exception as e:  # noqa: BLE001 - keep the other runs
                doc["errors"][f"{stack}/{size}"] = f"{type(e).__name__}: {e}"[:2000]
            if dist.get_rank() == 0:
                r = doc["runs"].get(f"{stack}/{size}")
                said = (f"host {r['host_s'] * 1e3:.1f} ms (forward {r['forward_host_s']['median'] * 1e3:.1f}, backward "
                        f"{r['backward_host_s']['median'] * 1e3:.1f}), step {r['step_s']['median'] * 1e3:.1f} ms"
                        if r else doc["errors"][f"{stack}/{size}"][:200])
                print(f"[host_size_probe] {stack} {size}: {said} ({time.time() - t0:.1f} s)", flush=True)
                with open(path, "w") as f:
                    json.dump(doc, f, indent=1)
    dist.barrier(device_ids=[run_step.LOCAL_RANK])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
