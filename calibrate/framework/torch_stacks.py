"""Host dispatch per stack (the torch_stacks part): how much CPU time each PyTorch stack spends per
transformer layer and per micro-batch, measured on a tiny GPT whose kernels are far shorter than their
launches (hidden 64, 2 heads, sequence 64, vocabulary 512, micro-batch 1), so a step's wall time is
the host's time.

The stacks are built exactly as reports/validation/scripts/run_step.py builds them (its functions are
imported), at two depths (2 and 8 layers): the slope over the depth is the host time per layer, the
intercept the per-micro-batch (embedding, head, loss) or per-step (optimizer) part
(sections_stacks.py fits them). Per data-parallel stack, in microseconds of wall time (median of 9
samples after 3 warm-up calls, each sample ending with torch.cuda.synchronize()): forward (forward +
loss of one micro-batch), forward_backward (no gradient synchronization: DDP under no_sync),
forward_backward_sync (DDP's last micro-batch), optimizer (AdamW step). Pipelines: schedule.step() at
two stage depths and two micro-batch counts, one stage a rank.

In the framework driver every stack runs at one rank on GPU 0, in a one-rank NCCL group: DDP's
all-reduce and FSDP2's all-gather and reduce-scatter are issued (their host time is in the figures)
but move nothing. What one GPU cannot measure: the pipelines (torch.distributed.pipelining needs a
stage per rank, and NCCL refuses two ranks on one GPU), and the host time a collective's wait for
its slowest peer adds at several ranks. calibrate/scripts/torch_stack_dispatch.py runs the same
measurements under torchrun at several ranks, pipelines included.
"""
import contextlib
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist

from . import validation_models

validation_models.on_path()
import run_step  # noqa: E402
import run_step_stacks  # noqa: E402
from model import init_weights, loss_fn  # noqa: E402

TINY = dict(hidden=64, heads=2, vocab=512, seq=64, micro_batch=1)
DEPTHS = (2, 8)
PIPE_LAYERS, PIPE_MICRO_BATCHES = (1, 4), (2, 4)


SAMPLES, WARMUP = 9, 3  # the scripts' --samples, --warmup


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


# The stacks one GPU measures, in the order a run of fewer sizes keeps them: the single-GPU stack
# first, whose forward share splits the stacks that cannot time their forward alone.
ONE_GPU_STACKS = ("single", "ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stacks(dev, sizes=len(ONE_GPU_STACKS), progress=lambda done, total: None):
    del dev  # run_step places the stacks on its LOCAL_RANK's GPU: 0 here, as the driver's
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    run_step.setup()
    doc = {"world_size": dist.get_world_size(), "tiny_model": TINY, "depths": list(DEPTHS),
           "samples": SAMPLES, "warmup": WARMUP, "threads_per_rank": torch.get_num_threads(), "stacks": {},
           "errors": {}}
    try:
        for i, stack in enumerate(ONE_GPU_STACKS[:sizes]):
            progress(i, sizes)
            try:
                doc["stacks"][stack] = {f"L{L}": dp_stack(stack, L) for L in DEPTHS}
            except Exception as e:  # noqa: BLE001 - keep the other stacks; sections says it is not measured
                doc["errors"][stack] = f"{type(e).__name__}: {e}"[:2000]
    finally:
        dist.destroy_process_group()
    return {"launches": [doc], "pipeline_actions": None}
