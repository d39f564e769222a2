#!/usr/bin/env python3
"""Host dispatch per stack: how much CPU time each PyTorch stack spends per transformer layer and per
micro-batch, measured on a tiny GPT whose kernels are far shorter than their launches (hidden 64,
2 heads, sequence 64, vocabulary 512, micro-batch 1), so a step's wall time is the host's time.

The stacks are built exactly as reports/validation/scripts/run_step.py builds them (its functions are
imported), at two depths (2 and 8 layers): the slope over the depth is the host time per layer,
the intercept the per-micro-batch (embedding, head, loss) or per-step (optimizer) part.

  python3 calibrate/scripts/torch_stack_dispatch.py --out DIR                      # single
  torchrun --standalone --nproc-per-node 2 calibrate/scripts/torch_stack_dispatch.py --out DIR   # the rest

writes DIR/torch_stack_dispatch_wN.json (rank 0). Per data-parallel stack, in microseconds of wall time
(median of --samples samples, 9 by default, after --warmup warm-up calls, 3 by default, each sample ending with torch.cuda.synchronize()):
forward (forward + loss of one micro-batch), forward_backward (no gradient synchronization: DDP
under no_sync), forward_backward_sync (DDP's last micro-batch), optimizer (AdamW step + zero_grad).
Pipelines: schedule.step() at two stage depths (--pipe-layers, 1 and 4 layers a stage by default) and
two micro-batch counts (--pipe-micro-batches, 2 and 4), one stage a rank.
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
from model import init_weights, loss_fn  # noqa: E402

TINY = dict(hidden=64, heads=2, vocab=512, seq=64, micro_batch=1)
DEPTHS = (2, 8)
PIPE_LAYERS, PIPE_MICRO_BATCHES = (1, 4), (2, 4)


SAMPLES, WARMUP = 9, 3  # --samples, --warmup


def wall_us(fn, samples=None, warmup=None):
    samples = SAMPLES if samples is None else samples
    warmup = WARMUP if warmup is None else warmup
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        if dist.is_initialized():
            dist.barrier(device_ids=[run_step.LOCAL_RANK])
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e6)
    # The slowest rank's sample (collectives make the ranks wait for each other).
    if dist.is_initialized() and dist.get_world_size() > 1:
        t = torch.tensor(out, device=run_step.DEV, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        out = t.tolist()
    return {"median": statistics.median(out), "min": min(out), "max": max(out), "samples": len(out)}


def dp_stack(stack, layers):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    cfg = dict(TINY, stack=stack, layers=layers)
    model, _ = run_step_stacks.build_dp(cfg, run_step.DEV, run_step.LOCAL_RANK)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    g = torch.Generator(device=run_step.DEV)
    g.manual_seed(7)
    x = torch.randint(0, TINY["vocab"], (1, TINY["seq"]), device=run_step.DEV, generator=g)
    y = torch.randint(0, TINY["vocab"], (1, TINY["seq"]), device=run_step.DEV, generator=g)
    autocast = stack in ("single", "ddp")

    def forward():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            if autocast:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits = model(x)
            else:
                logits = model(x)
            return loss_fn(logits, y)

    def fwd_only():
        ctx = model.no_sync() if stack == "ddp" else contextlib.nullcontext()
        with ctx:
            loss = forward()
            del loss

    def fwd_bwd(sync):
        ctx = model.no_sync() if stack == "ddp" and not sync else contextlib.nullcontext()
        with ctx:
            forward().backward()

    def step():
        # The gradients stay (no zero_grad inside the timing): every timed step updates them all.
        opt.step()

    r = {}
    # FSDP2 keeps state between a forward and its backward; its forward is timed only as part of
    # forward + backward (forward_backward), the others also alone.
    if not stack.startswith("fsdp2"):
        r["forward"] = wall_us(fwd_only)
    r["forward_backward"] = wall_us(lambda: fwd_bwd(False))
    if stack == "ddp":
        r["forward_backward_sync"] = wall_us(lambda: fwd_bwd(True))
    fwd_bwd(True)
    r["optimizer"] = wall_us(step)
    opt.zero_grad(set_to_none=True)
    del model, opt
    torch.cuda.empty_cache()
    return r


def pipe_stack(stack, layers_per_stage, micro_batches):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
    from torch.nn.attention import SDPBackend, sdpa_kernel
    S = dist.get_world_size()
    cfg = dict(TINY, layers=layers_per_stage * S)
    rank = dist.get_rank()
    first, last = rank == 0, rank == S - 1
    with torch.device(run_step.DEV):
        mod = run_step_stacks.Stage(cfg, rank * layers_per_stage, (rank + 1) * layers_per_stage, first, last)
    init_weights(mod, cfg["layers"])
    stage = PipelineStage(mod, rank, S, run_step.DEV)
    Sched = ScheduleGPipe if stack == "pipe-gpipe" else Schedule1F1B
    sched = Sched(stage, n_microbatches=micro_batches, loss_fn=loss_fn)
    opt = torch.optim.AdamW(mod.parameters(), lr=1e-4, fused=True)
    x = torch.randint(0, TINY["vocab"], (micro_batches, TINY["seq"]), device=run_step.DEV)
    y = torch.randint(0, TINY["vocab"], (micro_batches, TINY["seq"]), device=run_step.DEV)
    import inspect
    kw = {"return_outputs": False} if "return_outputs" in inspect.signature(sched.step).parameters else {}

    def step():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            if first:
                sched.step(x, **kw)
            elif last:
                sched.step(target=y, losses=[], **kw)
            else:
                sched.step(**kw)
        opt.step()
        opt.zero_grad(set_to_none=True)
    r = wall_us(step)
    del mod, stage, sched, opt
    torch.cuda.empty_cache()
    return r


def main():
    global SAMPLES, WARMUP, DEPTHS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stacks", nargs="+", default=None,
                    help="only these stacks (default: single at 1 rank, every other stack at more)")
    ap.add_argument("--samples", type=int, default=9, help="timed samples per figure (their median is kept)")
    ap.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS),
                    help="layers of the data-parallel stacks' runs (merge_torch_calibration.py fits the shallowest and "
                         "the deepest): the depths of the models the calibration will cost")
    ap.add_argument("--pipe-layers", type=int, nargs=2, default=list(PIPE_LAYERS),
                    help="layers a stage of the pipelines' runs (merge_torch_calibration.py fits over both)")
    ap.add_argument("--pipe-micro-batches", type=int, nargs=2, default=list(PIPE_MICRO_BATCHES),
                    help="micro-batches of the pipelines' runs (1F1B needs at least as many as stages)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls before them")
    args = ap.parse_args()
    SAMPLES, WARMUP, DEPTHS = args.samples, args.warmup, tuple(args.depths)
    os.makedirs(args.out, exist_ok=True)
    run_step.setup()
    world = dist.get_world_size()
    doc = {"schema_version": 1, "kind": "trainsim.torch_stack_dispatch", "world_size": world, "tiny_model": TINY,
           "depths": list(DEPTHS), "pipe_layers": args.pipe_layers, "pipe_micro_batches": args.pipe_micro_batches,
           "samples": SAMPLES, "warmup": WARMUP,
           "provenance": {"script": "calibrate/scripts/torch_stack_dispatch.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(run_step.DEV), "torch": torch.__version__,
                          "threads_per_rank": torch.get_num_threads()},
           "stacks": {}, "errors": {}}
    stacks = ["single"] if world == 1 else ["ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload", "pipe-gpipe", "pipe-1f1b"]
    if args.stacks:
        stacks = [s for s in stacks if s in args.stacks]
    out_path = os.path.join(args.out, f"torch_stack_dispatch_w{world}.json")
    for stack in stacks:
        t0 = time.time()
        try:
            if stack.startswith("pipe-"):
                doc["stacks"][stack] = {f"L{L}_M{M}": pipe_stack(stack, L, M) for L in args.pipe_layers
                                       for M in args.pipe_micro_batches}
            else:
                doc["stacks"][stack] = {f"L{L}": dp_stack(stack, L) for L in DEPTHS}
        except Exception as e:  # noqa: BLE001 - keep the other stacks
            doc["errors"][stack] = f"{type(e).__name__}: {e}"[:2000]
        if dist.get_rank() == 0:
            print(f"[stack_dispatch] {stack}: {time.time() - t0:.1f} s", flush=True)
            with open(out_path, "w") as f:
                json.dump(doc, f, indent=1)
    dist.barrier(device_ids=[run_step.LOCAL_RANK])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
