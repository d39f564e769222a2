#!/usr/bin/env python3
"""Time real training steps of model.py's GPT (or, with --arch llama, model_llama.py's decoder) on one
stack and write a trainsim measured run.

One configuration:
    torchrun --standalone --nproc-per-node 2 run_step.py --stack fsdp2-zero3 --layers 24 --hidden 1024 \
        --heads 16 --micro-batch 4 --grad-accum 2 --out DIR --name NAME
Several configurations in one process (what drive.py does, to pay for the start of Python, torch and
NCCL once per GPU count): --plan PLAN.json, a list of objects whose keys are the long options above
(stack, layers, hidden, ..., name); configurations already finished, failed or started in DIR are
skipped, so a crashed plan is resumed by starting it again.

Stacks: single, ddp, fsdp2-zero2, fsdp2-zero3, fsdp2-offload, pipe-gpipe, pipe-1f1b.
Per configuration, in DIR: NAME.json (measured run), NAME.model.json (trainsim model),
NAME.trace.json.gz (torch.profiler Chrome trace of one step, rank 0), or NAME.failed.rankR.json.

Its parts: run_step_plan.py holds the options and a plan's configurations, run_step_stacks.py builds the
stacks, run_step_probes.py holds what each timed step records besides its time, run_step_doc.py writes
the measured-run JSON; run_step_smoke.sh runs every stack small on a GPU machine.
"""
import datetime
import gc
import json
import os
import shlex
import sys
import threading
import time
import traceback
from types import SimpleNamespace

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import loss_fn  # noqa: E402
import run_step_allocator  # noqa: E402
from run_step_doc import measured_run_doc  # noqa: E402
from run_step_plan import normalize, parser, state_of  # noqa: E402
from run_step_stacks import BF16, build_dp, build_pipeline  # noqa: E402
from run_step_probes import (GcPauses, cpu_times, profiled_steps, sched_delta, steal_fraction,  # noqa: E402
                             thread_schedstat)


# ----------------------------------------------------------------------------------------------
# process-wide state

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
# PIN_CPUS_PER_RANK=N: this process, and every thread it starts later, runs only
# on CPUs N*LOCAL_RANK .. N*LOCAL_RANK+N-1, so that ranks never share a CPU; recorded in provenance.
if os.environ.get("PIN_CPUS_PER_RANK"):
    _n = int(os.environ["PIN_CPUS_PER_RANK"])
    os.sched_setaffinity(0, range(_n * LOCAL_RANK, _n * LOCAL_RANK + _n))
DEV = None
_deadline = [float("inf")]
_current = [None]


def log(*a):
    print(f"[rank {RANK} {time.strftime('%H:%M:%S')}]", *a, flush=True)


def watchdog(out_dir):
    # A configuration that runs past its limit (a hang in a collective, say) ends the process; the
    # driver starts the plan again and skips it.
    while True:
        time.sleep(1.0)
        if time.time() > _deadline[0]:
            name = _current[0]
            write_json(os.path.join(out_dir, f"{name}.failed.rank{RANK}.json"),
                       {"name": name, "rank": RANK, "reason": "timeout", "error": "configuration time limit passed"})
            log(f"{name}: time limit passed, exiting")
            os._exit(4)


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def setup():
    global DEV
    torch.cuda.set_device(LOCAL_RANK)
    DEV = torch.device("cuda", LOCAL_RANK)
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        dist.init_process_group("nccl", device_id=DEV, timeout=datetime.timedelta(seconds=240))
    # CPU threads: torchrun sets OMP_NUM_THREADS=1; the CPU optimizer of fsdp2-offload needs the cores.
    cores = os.cpu_count() or 1
    torch.set_num_threads(max(1, cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", WORLD)))))


# ----------------------------------------------------------------------------------------------
# one configuration


def run_config(cfg):
    stack = cfg["stack"]
    V, s = cfg["vocab"], cfg["seq"]
    mb = cfg["micro_batch"]
    out = cfg["out"]
    name = cfg["name"]
    pipe = stack.startswith("pipe-")
    if stack == "single" and WORLD != 1:
        raise SystemExit("--stack single runs one process")
    torch.manual_seed(1234)

    t_build = time.perf_counter()
    stage_mod = tie_group = schedule = None
    timed_calls = []
    if pipe:
        built = build_pipeline(cfg, DEV, RANK, WORLD)
        stage_mod, tie_group, schedule, busy_timer = built.stage_mod, built.tie_group, built.schedule, built.busy_timer
        timed_calls, details, schedule_name = built.timed_calls, built.details, built.schedule_name
        params = list(stage_mod.parameters())
        dp, pp, ga = 1, WORLD, built.micro_batches
        global_batch = built.micro_batches * mb
    else:
        busy_timer = None
        model, details = build_dp(cfg, DEV, LOCAL_RANK)
        params = list(model.parameters())
        dp, pp, ga = WORLD, 1, cfg["grad_accum"]
        global_batch = dp * mb * ga
        schedule_name = None
    local_params = sum(p.numel() if not hasattr(p, "to_local") else p.to_local().numel() for p in params)

    # AdamW, fused where it runs (CPU parameters of fsdp2-offload included, if this torch allows it).
    opt_impl = "fused"
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    if busy_timer is not None:
        busy_timer.wrap(opt, "step", "optimizer")

    # Fixed random data: (tokens, targets) per micro-batch.
    g = torch.Generator(device=DEV)
    g.manual_seed(100 + (RANK if not pipe else 0))
    if pipe:
        x_all = torch.randint(0, V, (global_batch, s), device=DEV, generator=g)
        y_all = torch.randint(0, V, (global_batch, s), device=DEV, generator=g)
    else:
        xs = [torch.randint(0, V, (mb, s), device=DEV, generator=g) for _ in range(ga)]
        ys = [torch.randint(0, V, (mb, s), device=DEV, generator=g) for _ in range(ga)]

    losses_seen = []

    step_kw = {}
    if pipe:
        import inspect
        if "return_outputs" in inspect.signature(schedule.step).parameters:
            step_kw["return_outputs"] = False  # no concatenation of every micro-batch's logits
        details["step_kwargs"] = dict(step_kw)

    optimizer_walls = []  # the host's wall time in opt.step() of each timed step (recorded while on)
    record_optimizer = [False]

    def forward_backward():
        if pipe:
            losses = []
            if WORLD == 1:
                schedule.step(x_all, target=y_all, losses=losses, **step_kw)
            elif RANK == 0:
                schedule.step(x_all, **step_kw)
            elif RANK == WORLD - 1:
                schedule.step(target=y_all, losses=losses, **step_kw)
            else:
                schedule.step(**step_kw)
            if tie_group is not None and (stage_mod.first or stage_mod.last):
                dist.all_reduce(stage_mod.head_weight().grad, group=tie_group)
            if losses:
                losses_seen.append(float(torch.stack([l.detach().float() for l in losses]).mean()))
        else:
            tot = 0.0
            for i in range(ga):
                if stack == "ddp" and i < ga - 1:
                    ctx = model.no_sync()
                else:
                    import contextlib
                    ctx = contextlib.nullcontext()
                with ctx:
                    if stack.startswith("fsdp2"):
                        loss = loss_fn(model(xs[i]), ys[i]) / ga
                    else:
                        with torch.autocast("cuda", dtype=BF16):
                            logits = model(xs[i])
                        loss = loss_fn(logits, ys[i]) / ga
                    loss.backward()
                tot += loss.detach()
            losses_seen.append(tot)

    def train_step():
        forward_backward()
        t0 = time.perf_counter()
        opt.step()
        if record_optimizer[0]:
            optimizer_walls.append(time.perf_counter() - t0)
        opt.zero_grad(set_to_none=True)

    from torch.nn.attention import SDPBackend, sdpa_kernel

    def timed_step():
        dist.barrier(device_ids=[LOCAL_RANK])
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            train_step()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    gc.collect()
    torch.cuda.empty_cache()
    build_s = time.perf_counter() - t_build
    allocator_begun = run_step_allocator.start(DEV) if cfg.get("allocator_trace") else None
    log(f"{name}: built in {build_s:.1f} s, {local_params/1e9:.3f} B parameters on this rank")
    warm_times = []
    for i in range(cfg["warmup"]):
        if i == 0 and opt_impl == "fused":
            try:
                warm_times.append(timed_step())
                continue
            except RuntimeError as e:
                if "fused" not in str(e).lower() and "_fused_adam" not in str(e):
                    raise
                log(f"fused AdamW refused ({str(e).splitlines()[0]}); using foreach")
                opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, foreach=True)
                if busy_timer is not None:
                    busy_timer.wrap(opt, "step", "optimizer")
                opt_impl = "foreach (fused refused: " + str(e).splitlines()[0][:200] + ")"
        warm_times.append(timed_step())
    warm_peak_res = torch.cuda.max_memory_reserved(DEV)
    torch.cuda.reset_peak_memory_stats(DEV)
    times, busy_steps, gc_steps, wall_starts, sched_steps, host_steps = [], [], [], [], [], []
    cpu_before = cpu_times()
    gc_pauses = GcPauses()
    for _ in range(cfg["steps"]):
        if busy_timer is not None:
            busy_timer.collect()
            busy_timer.collect_host()
            busy_timer.on = True
        gc_pauses.collect()
        gc_pauses.on = True
        wall_starts.append(time.time())  # to place the step beside other records of the machine (GPU clocks)
        sched_before = thread_schedstat()
        record_optimizer[0] = True
        times.append(timed_step())
        record_optimizer[0] = False
        sched_steps.append(sched_delta(sched_before, thread_schedstat()))
        gc_pauses.on = False
        gc_steps.append(gc_pauses.collect())
        if busy_timer is not None:
            busy_timer.on = False
            busy_steps.append(busy_timer.collect())  # timed_step synchronized: every event has run
            host_steps.append(busy_timer.collect_host())
    gc_pauses.close()
    steal = steal_fraction(cpu_before, cpu_times())
    peak_alloc = torch.cuda.max_memory_allocated(DEV)
    peak_res = torch.cuda.max_memory_reserved(DEV)
    if allocator_begun is not None:
        run_step_allocator.finish(DEV, allocator_begun, name, RANK, out, {
            "max_memory_allocated_timed": peak_alloc, "max_memory_reserved_timed": peak_res,
            "max_memory_reserved_warmup": warm_peak_res, "reserved_at_end": torch.cuda.memory_reserved(DEV),
            "warmup_steps": cfg["warmup"], "timed_steps": cfg["steps"]})

    # Per-step time: the slowest rank's.
    tt = torch.tensor(times, device=DEV, dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    step_times = [float(x) for x in tt.tolist()]
    gathered = [None] * WORLD
    dist.all_gather_object(gathered, {"rank": RANK, "alloc": peak_alloc, "reserved": peak_res,
                                      "gpu": torch.cuda.get_device_name(DEV), "times": times,
                                      "local_params": local_params, "busy": busy_steps, "gc": gc_steps,
                                      "sched": sched_steps, "host_calls": host_steps,
                                      "total_mem": torch.cuda.get_device_properties(DEV).total_memory})
    last_loss = None
    if losses_seen:
        last_loss = float(losses_seen[-1])

    # One profiled step (rank 0 records, or with --trace-all-ranks every rank, each rank R but 0 into
    # NAME.rankR.trace.json.gz; every rank runs the step).
    trace_name = profiled_steps(cfg, timed_step, RANK)
    dist.barrier(device_ids=[LOCAL_RANK])
    # --optimizer-alone K: after everything above, one more forward and backward
    # leave gradients, then opt.step() runs K times on its own, each after a barrier and half a
    # second of idle host (no backward just before it), its wall time taken on every rank: the same
    # optimizer over the same tensors as in the timed steps, outside the step.
    optimizer_alone = []
    if cfg.get("optimizer_alone"):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            forward_backward()
        torch.cuda.synchronize()
        for _ in range(cfg["optimizer_alone"]):
            dist.barrier(device_ids=[LOCAL_RANK])
            time.sleep(0.5)
            t0 = time.perf_counter()
            opt.step()
            optimizer_alone.append(time.perf_counter() - t0)
    host_optimizer = [None] * WORLD
    dist.all_gather_object(host_optimizer, {"rank": RANK, "in_step": optimizer_walls, "alone": optimizer_alone})

    if RANK == 0:
        doc = measured_run_doc(SimpleNamespace(
            gathered=gathered, step_times=step_times, stack=stack, pipe=pipe, dp=dp, pp=pp, ga=ga, mb=mb,
            global_batch=global_batch, schedule_name=schedule_name, name=name, out=out, cfg=cfg, s=s, opt_impl=opt_impl,
            last_loss=last_loss, details=details, warm_times=warm_times, trace_name=trace_name,
            build_s=build_s, steal=steal, wall_starts=wall_starts, host_optimizer=host_optimizer,
            timed_calls=timed_calls, world=WORLD))
        med = doc["measured"]["step_time_s"]
        write_json(os.path.join(out, f"{name}.json"), doc)
        log(f"{name}: step {med:.4f} s (spread {doc['measured']['step_time_spread']:.3f}), peak alloc "
            f"{max(doc['measured']['peak_allocated_bytes'])/2**30:.2f} GiB, reserved "
            f"{max(doc['measured']['peak_reserved_bytes'])/2**30:.2f} GiB")



def main():
    args = parser(__doc__).parse_args()
    os.makedirs(args.out, exist_ok=True)
    defaults = {k: v for k, v in vars(args).items() if k not in ("plan", "out", "deadline")}
    if args.plan:
        with open(args.plan) as f:
            plan = [normalize(d, defaults, args.out, WORLD) for d in json.load(f)]
    else:
        plan = [normalize({}, defaults, args.out, WORLD)]
        plan[0]["command"] = " ".join(shlex.quote(x) for x in sys.argv)
    setup()
    threading.Thread(target=watchdog, args=(args.out,), daemon=True).start()
    for cfg in plan:
        name = cfg["name"]
        st = state_of(args.out, name)
        if st != "pending":
            if RANK == 0:
                log(f"{name}: {st}, skipped")
            continue
        if args.deadline and time.time() + cfg.get("min_left", 0.0) > args.deadline:
            if RANK == 0:
                log(f"{name}: not started, too little time left before the deadline")
                write_json(os.path.join(args.out, f"{name}.failed.rank0.json"),
                           {"name": name, "rank": 0, "reason": "budget", "error": "not started: deadline"})
            continue
        dist.barrier(device_ids=[LOCAL_RANK])
        if RANK == 0:
            with open(os.path.join(args.out, f"{name}.started"), "w") as f:
                f.write(json.dumps(cfg) + "\n")
        _current[0] = name
        _deadline[0] = time.time() + cfg["time_limit"]
        try:
            run_config(cfg)
        except BaseException as e:  # noqa: BLE001 - record it, then end the process group's processes
            chain, c = [], e
            while c is not None and len(chain) < 10:  # pipelining wraps the OOM in a RuntimeError
                chain.append(c)
                c = c.__cause__ or c.__context__
            oom = any(isinstance(c, torch.cuda.OutOfMemoryError) or "out of memory" in str(c).lower() for c in chain)
            write_json(os.path.join(args.out, f"{name}.failed.rank{RANK}.json"),
                       {"name": name, "rank": RANK, "reason": "oom" if oom else "error",
                        "error": f"{type(e).__name__}: {e}"[:4000], "traceback": traceback.format_exc()[-8000:],
                        "max_memory_allocated": torch.cuda.max_memory_allocated(DEV),
                        "max_memory_reserved": torch.cuda.max_memory_reserved(DEV)})
            log(f"{name}: FAILED ({'oom' if oom else type(e).__name__}): {str(e)[:500]}")
            sys.stdout.flush()
            os._exit(3)
        _deadline[0] = float("inf")
        gc.collect()  # free the configuration's model, optimizer and caches before the next one
        torch.cuda.empty_cache()
    dist.barrier(device_ids=[LOCAL_RANK])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
