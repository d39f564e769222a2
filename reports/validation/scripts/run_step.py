#!/usr/bin/env python3
"""Time real training steps of the model.py GPT on one stack and write a trainsim measured run.

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
"""
import argparse
import datetime
import gc
import gzip
import json
import os
import resource
import shlex
import socket
import statistics
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import GPT, Block, init_weights, loss_fn, param_count, write_trainsim_model_json  # noqa: E402

STACKS = ["single", "ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload", "pipe-gpipe", "pipe-1f1b"]
SCRIPT = "reports/validation/scripts/run_step.py"


def parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", choices=STACKS)
    p.add_argument("--layers", type=int)
    p.add_argument("--hidden", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step per data-parallel rank")
    p.add_argument("--micro-batches", type=int, default=0, help="pipeline micro-batches per step")
    p.add_argument("--steps", type=int, default=4, help="timed steps")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", required=True)
    p.add_argument("--name")
    p.add_argument("--model-name", help="name in the trainsim model JSON (default NAME's model part)")
    p.add_argument("--no-trace", action="store_true")
    p.add_argument("--trace-cuda-only", action="store_true",
                   help="profile only the CUDA side (kernels, and the CUDA runtime and driver calls of every host "
                        "thread), not PyTorch's operators: the host runs at nearly its unprofiled pace (call 34)")
    p.add_argument("--trace-steps", type=int, default=1, help="consecutive steps in the profiled trace")
    p.add_argument("--trace-all-ranks", action="store_true", help="every rank records its trace (call 35)")
    p.add_argument("--optimizer-alone", type=int, default=0,
                   help="after the run, time opt.step() this many times on its own (validation call 21)")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds one configuration may take")
    p.add_argument("--plan", help="JSON list of configurations to run in this process")
    p.add_argument("--deadline", type=float, default=0.0,
                   help="Unix time after which no further configuration of the plan starts")
    p.add_argument("--min-left", type=float, default=0.0, help="(plan entries) seconds needed before the deadline")
    return p


# ----------------------------------------------------------------------------------------------
# process-wide state

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
# PIN_CPUS_PER_RANK=N (validation call 36): this process, and every thread it starts later, runs only
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


def cpu_times():
    """/proc/stat's machine-wide cpu line (user nice system idle iowait irq softirq steal ...), or None."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def steal_fraction(before, after):
    """The hypervisor's share of the CPU time the machine used or lost between two cpu_times():
    steal / (user + nice + system + irq + softirq + steal); None where unknown."""
    if not before or not after or len(before) < 8 or len(after) < 8:
        return None
    d = [a - b for a, b in zip(after, before)]
    parts = [d[0], d[1], d[2], d[5], d[6], d[7]]
    if min(parts) < 0 or sum(parts) <= 0:  # a counter that went back (e.g. a live migration): unknown
        return None
    return d[7] / sum(parts)


def versions():
    nccl = None
    try:
        v = torch.cuda.nccl.version()
        nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
    driver = None
    try:
        import subprocess
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.split("\n")[0].strip()
    except Exception:
        pass
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl, "driver": driver}


# ----------------------------------------------------------------------------------------------
# stacks

BF16 = torch.bfloat16


def build_dp(cfg):
    """single, ddp, fsdp2-*: returns (module, optimizer, step_fn, details)."""
    from model import GPT
    stack = cfg["stack"]
    L, h, a, V, s = cfg["layers"], cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["seq"]
    details = {}
    if stack in ("single", "ddp"):
        with torch.device(DEV):
            model = GPT(L, h, a, V, s)
        init_weights(model, L)
        if stack == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[LOCAL_RANK], gradient_as_bucket_view=True)
            details.update({"wrapper": "torch.nn.parallel.DistributedDataParallel", "bucket_cap_mb": 25,
                            "gradient_as_bucket_view": True, "grad_sync": "all-reduce on the last micro-batch "
                            "(no_sync on the others)", "reduce_dtype": "fp32 (gradients of fp32 parameters)"})
        details.update({"mixed_precision": "torch.autocast(cuda, bfloat16) around forward and loss; fp32 "
                                           "parameters, gradients and AdamW states",
                        "residual_stream": "fp32 (autocast leaves the embedding sum and residual adds in fp32)"})
    else:
        from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard
        mp = MixedPrecisionPolicy(param_dtype=BF16, reduce_dtype=torch.float32)
        offload = stack == "fsdp2-offload"
        reshard = stack != "fsdp2-zero2"
        policy = CPUOffloadPolicy(pin_memory=True) if offload else OffloadPolicy()
        if offload:
            # Built and initialised on the GPU, then fully_shard moves each shard to pinned host memory.
            with torch.device(DEV):
                model = GPT(L, h, a, V, s)
            init_weights(model, L)
        else:
            with torch.device("meta"):
                model = GPT(L, h, a, V, s)
        for blk in model.blocks:
            fully_shard(blk, mp_policy=mp, reshard_after_forward=reshard, offload_policy=policy)
        fully_shard(model, mp_policy=mp, reshard_after_forward=reshard, offload_policy=policy)
        if not offload:
            model.to_empty(device=DEV)
            init_weights(model, L)
        details.update({
            "wrapper": "torch.distributed.fsdp.fully_shard (FSDP2), one unit per transformer layer plus the root "
                       "(embeddings, final LayerNorm, tied head)",
            "mp_policy": "MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)",
            "reshard_after_forward": reshard,
            "offload_policy": "CPUOffloadPolicy(pin_memory=True)" if offload else "OffloadPolicy() (none)",
            "grad_sync": "reduce-scatter after every micro-batch's backward (FSDP2 default), accumulated "
                         "into the fp32 sharded gradients",
            "residual_stream": "bf16 (parameters are cast to bf16, no autocast)",
        })
        if offload:
            details["cpu_threads_per_rank"] = torch.get_num_threads()
    return model, details


class Stage(torch.nn.Module):
    """One pipeline stage: blocks [lo, hi); stage 0 holds the embeddings, the last the head and loss."""

    def __init__(self, cfg, lo, hi, first, last):
        super().__init__()
        h, V, s = cfg["hidden"], cfg["vocab"], cfg["seq"]
        self.first, self.last = first, last
        if first:
            self.wte = torch.nn.Embedding(V, h)
            self.wpe = torch.nn.Embedding(s, h)
        self.blocks = torch.nn.ModuleList([Block(h, cfg["heads"], 4 * h) for _ in range(lo, hi)])
        if last:
            self.ln_f = torch.nn.LayerNorm(h)
            if not first:
                # The tied head's copy of the token embedding; its gradient is summed with stage 0's.
                self.head = torch.nn.Parameter(torch.empty(V, h))

    def head_weight(self):
        return self.wte.weight if self.first else self.head

    def forward(self, x):
        with torch.autocast("cuda", dtype=BF16):
            if self.first:
                pos = torch.arange(x.shape[1], device=x.device)
                x = self.wte(x) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            if self.last:
                x = torch.nn.functional.linear(self.ln_f(x), self.head_weight())
        return x


class GcPauses:
    """Python's cyclic garbage collections during the timed steps, through gc.callbacks: each
    collection's generation and wall time, in whichever thread ran it (autograd's too). A collection
    stops every Python thread of the process, so on a host-bound step it is host time inside a call.
    """

    def __init__(self):
        self.on = False
        self.started = None
        self.events = []
        gc.callbacks.append(self)

    def __call__(self, phase, info):
        if not self.on:
            return
        if phase == "start":
            self.started = time.perf_counter()
        elif self.started is not None:
            self.events.append((info.get("generation", -1), time.perf_counter() - self.started))
            self.started = None

    def collect(self):
        """{"seconds": total pause, "collections": [gen 0, gen 1, gen 2]} since the last collect."""
        out = {"seconds": sum(s for _, s in self.events), "collections": [0, 0, 0]}
        for g, _ in self.events:
            if 0 <= g <= 2:
                out["collections"][g] += 1
        self.events = []
        return out

    def close(self):
        if self in gc.callbacks:
            gc.callbacks.remove(self)


def thread_schedstat():
    """{thread id: (name, CPU ns, run-queue wait ns, CPU last run on)} of this process's threads, from
    /proc/self/task/*/schedstat (time on a CPU, time runnable but waiting for one) and stat's field 39
    (the CPU the thread last ran on; -1 where unreadable); {} where unknown."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                cpu, wait = (int(x) for x in f.read().split()[:2])
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
        last = -1
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                # Fields after the parenthesised name (which may hold spaces) start at field 3.
                last = int(f.read().rsplit(")", 1)[1].split()[39 - 3])
        except (OSError, ValueError, IndexError):
            pass
        out[tid] = (name, cpu, wait, last)
    return out


def sched_delta(before, after):
    """Per thread present at both ends, (name, CPU seconds, run-queue wait seconds, CPU last run on at
    the second read) between two thread_schedstat() reads, the threads that used most CPU first (at
    most 8)."""
    rows = [(after[t][0], (after[t][1] - before[t][1]) / 1e9, (after[t][2] - before[t][2]) / 1e9, after[t][3])
            for t in after if t in before]
    return sorted(rows, key=lambda r: -r[1])[:8]


class BusyTimer:
    """A pipeline stage's compute busy time in the timed steps, without the profiler.

    CUDA events (enable_timing) are recorded on the stage's compute stream (the current stream)
    around every call that issues its compute: PipelineStage.forward_one_chunk and
    backward_one_chunk (and backward_weight_one_chunk, scale_grads where this torch has them), the
    schedule's loss computation, and the optimizer step. A call nested in a timed call is not timed
    again. Each pair's elapsed time is the stream's time from the call's first enqueued work to its
    last, so a GPU waiting on the host inside a call counts as busy (as the replay counts host
    dispatch of a compute op as compute), while a wait for a neighbour's activation or gradient
    (the receive's stream wait comes before the call) and the time between calls do not. The
    calls are sequential on one stream, so the sum of the pairs is the union of the busy time.
    """

    def __init__(self):
        self.on = False
        self.depth = 0
        self.pairs = []
        # (label, host wall seconds, calling thread's CPU seconds, its system seconds, its minor page
        # faults, the process's minor page faults) of each timed call
        self.host = []

    def wrap(self, obj, name, label):
        fn = getattr(obj, name, None)
        if fn is None:
            return False

        def timed(*a, **k):
            if not self.on or self.depth > 0:
                return fn(*a, **k)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            self.depth += 1
            wall0, cpu0 = time.perf_counter(), time.thread_time()
            thread0, process0 = resource.getrusage(resource.RUSAGE_THREAD), resource.getrusage(resource.RUSAGE_SELF)
            try:
                return fn(*a, **k)
            finally:
                wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
                thread1, process1 = resource.getrusage(resource.RUSAGE_THREAD), resource.getrusage(resource.RUSAGE_SELF)
                self.host.append((label, wall, cpu, thread1.ru_stime - thread0.ru_stime,
                                  thread1.ru_minflt - thread0.ru_minflt, process1.ru_minflt - process0.ru_minflt))
                self.depth -= 1
                end.record()
                self.pairs.append((label, start, end))

        setattr(obj, name, timed)
        return True

    def collect(self):
        """Seconds per label and calls since the last collect; call after torch.cuda.synchronize()."""
        out = {}
        for label, start, end in self.pairs:
            out[label] = out.get(label, 0.0) + start.elapsed_time(end) / 1e3
            out[label + "_calls"] = out.get(label + "_calls", 0) + 1
        self.pairs = []
        return out

    def collect_host(self):
        """{label: [host wall seconds, calling thread's CPU seconds, its system seconds, its minor
        page faults, the process's minor page faults]} of the calls since the last collect_host: how
        long the host spent inside each kind of call, and how much of it the calling thread computed
        (a backward call's work runs on autograd's thread, so its calling thread's CPU time is its own
        share only; the process's faults count every thread's, autograd's included)."""
        out = {}
        for label, *values in self.host:
            out[label] = [x + v for x, v in zip(out.get(label, [0.0, 0.0, 0.0, 0, 0]), values)]
        self.host = []
        return out


# ----------------------------------------------------------------------------------------------
# one configuration


def run_config(cfg):
    stack = cfg["stack"]
    L, h, a, V, s = cfg["layers"], cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["seq"]
    mb = cfg["micro_batch"]
    out = cfg["out"]
    name = cfg["name"]
    pipe = stack.startswith("pipe-")
    if stack == "single" and WORLD != 1:
        raise SystemExit("--stack single runs one process")
    torch.manual_seed(1234)

    t_build = time.perf_counter()
    stage_mod = None
    if pipe:
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
        S = WORLD
        M = cfg["micro_batches"] or 2 * S
        per = [L // S + (1 if i < L % S else 0) for i in range(S)]
        lo = sum(per[:RANK])
        first, last = RANK == 0, RANK == S - 1
        with torch.device(DEV):
            stage_mod = Stage(cfg, lo, lo + per[RANK], first, last)
        init_weights(stage_mod, L)
        tie_group = None
        if S > 1:
            tie_group = dist.new_group([0, S - 1])
            if first or last:
                with torch.no_grad():
                    dist.broadcast(stage_mod.head_weight().data, src=0, group=tie_group)
        stage = PipelineStage(stage_mod, RANK, S, DEV)
        Sched = ScheduleGPipe if stack == "pipe-gpipe" else Schedule1F1B
        schedule = Sched(stage, n_microbatches=M, loss_fn=loss_fn)
        busy_timer = BusyTimer()
        timed_calls = [n for n in ("forward_one_chunk", "backward_one_chunk", "backward_weight_one_chunk",
                                   "scale_grads") if busy_timer.wrap(stage, n, n)]
        timed_calls += [n for n in ("_maybe_compute_loss", "_compute_loss") if busy_timer.wrap(schedule, n, "loss")]
        params = list(stage_mod.parameters())
        dp, pp, ga = 1, S, M
        global_batch = M * mb
        details = {
            "wrapper": f"torch.distributed.pipelining.PipelineStage + {Sched.__name__}(n_microbatches={M}, "
                       f"loss_fn=cross_entropy, scale_grads default)",
            "layers_per_stage": per,
            "stage0": "token + position embeddings and its layers", "last_stage": "its layers, final LayerNorm, "
            "tied LM head (a copy of the embedding; its gradient is all-reduced with stage 0's after backward, as "
            "Megatron-LM does) and the loss",
            "mixed_precision": "torch.autocast(cuda, bfloat16) inside each stage's forward; fp32 parameters, "
                               "gradients and AdamW states",
            "residual_stream": "fp32 (autocast); stage-to-stage activations are fp32 [micro_batch, seq, hidden]",
        }
        schedule_name = "gpipe" if stack == "pipe-gpipe" else "1f1b"
    else:
        busy_timer = None
        model, details = build_dp(cfg)
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
    trace_name = None
    if not cfg.get("no_trace"):
        if RANK == 0 or cfg.get("trace_all_ranks"):
            from torch.profiler import ProfilerActivity, profile
            activities = [ProfilerActivity.CUDA] if cfg.get("trace_cuda_only") else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
            with profile(activities=activities, record_shapes=False, with_stack=False, profile_memory=False) as prof:
                for _ in range(cfg.get("trace_steps") or 1):
                    timed_step()
            raw = os.path.join(out, f"{name}.trace.json" if RANK == 0 else f"{name}.rank{RANK}.trace.json")
            prof.export_chrome_trace(raw)
            with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=6) as z:
                while True:
                    chunk = f.read(1 << 24)
                    if not chunk:
                        break
                    z.write(chunk)
            os.remove(raw)
            trace_name = os.path.basename(raw) + ".gz"
        else:
            for _ in range(cfg.get("trace_steps") or 1):
                timed_step()
    dist.barrier(device_ids=[LOCAL_RANK])
    # --optimizer-alone K (validation call 21): after everything above, one more forward and backward
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
        gpu = gathered[0]["gpu"]
        med = statistics.median(step_times)
        is_offload = stack == "fsdp2-offload"
        zero = {"single": 0, "ddp": 0, "fsdp2-zero2": 2, "fsdp2-zero3": 3, "fsdp2-offload": 3}.get(stack, 0)
        strategy = {"schema_version": 1, "gpus": WORLD, "dp": dp, "tp": 1, "pp": pp, "zero": zero,
                    "offload_params": "cpu" if is_offload else "none",
                    "offload_optimizer": "cpu" if is_offload else "none",
                    "micro_batch": mb, "global_batch": global_batch, "recompute": "none",
                    "precision": "bf16-mixed", "seq": s}
        if schedule_name:
            strategy["schedule"] = schedule_name
        fp32_res = stack in ("single", "ddp") or pipe
        model_file = f"{name}.model.json"
        write_trainsim_model_json(os.path.join(out, model_file), cfg.get("model_name") or name,
                                  L, h, a, V, s, fp32_residual=fp32_res)
        stack_name = {"single": "pytorch", "ddp": "pytorch-ddp", "fsdp2-zero2": "pytorch-fsdp",
                      "fsdp2-zero3": "pytorch-fsdp", "fsdp2-offload": "pytorch-fsdp",
                      "pipe-gpipe": "pytorch-pipelining", "pipe-1f1b": "pytorch-pipelining"}[stack]
        details.update({"run_step_stack": stack, "optimizer": f"torch.optim.AdamW({opt_impl}, lr=1e-4, "
                        "betas=(0.9, 0.95), weight_decay=0.1)", "grad_accum": ga, "attention_kernel":
                        "scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION)",
                        "gradient_clipping": "none", "data": "fixed random tokens", "loss_last_step": last_loss,
                        "params_total": param_count(L, h, a, V, s)})
        doc = {
            "schema_version": 1, "kind": "trainsim.measured_run", "name": name,
            "provenance": {"script": SCRIPT, "command": cfg["command"],
                           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "host": socket.gethostname(), "gpu": gpu, "gpus": WORLD,
                           "gpu_memory_bytes": gathered[0]["total_mem"],
                           "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                           **({"cpu_steal_fraction": steal} if steal is not None else {}),
                           **versions()},
            "model": model_file,
            "stack": {"name": stack_name, "details": details},
            "strategy": strategy,
            "measured": {"warmup_steps": cfg["warmup"], "warmup_step_times_s": warm_times,
                         "step_times_s": step_times, "step_time_s": med,
                         "step_time_spread": (max(step_times) - min(step_times)) / med,
                         "step_times_s_per_rank": [g_["times"] for g_ in gathered],
                         "peak_allocated_bytes": [g_["alloc"] for g_ in gathered],
                         "peak_reserved_bytes": [g_["reserved"] for g_ in gathered],
                         "params_per_rank": [g_["local_params"] for g_ in gathered],
                         "tokens_per_s": global_batch * s / med, "trace": trace_name,
                         "build_s": build_s},
        }
        if os.environ.get("PIN_CPUS_PER_RANK"):
            doc["provenance"]["cpu_affinity_per_rank"] = int(os.environ["PIN_CPUS_PER_RANK"])
        # Rank 0's wall clock (Unix seconds) just before each timed step's barrier: the step is the
        # next step_times_s[i] seconds after its barrier.
        details["step_wall_clock_starts"] = wall_starts
        details["optimizer_host_wall"] = {
            "method": "time.perf_counter around opt.step() in each timed step (in_step_s), and with "
                      "--optimizer-alone K around K more opt.step() calls after the timed and profiled steps, "
                      "each after a barrier and 0.5 s of idle host (alone_s)",
            "per_rank": [{"rank": x["rank"], "in_step_s": x["in_step"], "alone_s": x["alone"]} for x in host_optimizer]}
        details["thread_schedule"] = {
            "method": "/proc/self/task/*/schedstat around each timed step (run_step.py thread_schedstat): per thread "
                      "of the rank's process, the CPU time and the time runnable but waiting for a CPU; last_cpu: the CPU it last ran on "
                      "at the step's end (/proc/self/task/*/stat field 39)",
            "per_rank": [{"rank": g_["rank"], "threads_per_step": [[{"name": n, "cpu_s": c, "runqueue_wait_s": w, "last_cpu": lc}
                                                                     for n, c, w, lc in step] for step in g_["sched"]]}
                         for g_ in gathered]}
        details["python_gc"] = {
            "method": "gc.callbacks around each timed step (run_step.py GcPauses): every cyclic collection's "
                      "generation and wall time, in any thread of the rank's process",
            "per_rank": [{"rank": g_["rank"], "seconds_per_step": [x["seconds"] for x in g_["gc"]],
                          "collections_per_step": [x["collections"] for x in g_["gc"]]} for g_ in gathered]}
        if pipe:
            stage_busy = pipeline_busy(gathered, step_times)
            details["busy_timing"] = {
                "method": "CUDA events around each compute-issuing call over the timed steps, no profiler "
                          "(run_step.py BusyTimer): " + ", ".join(timed_calls) + ", optimizer.step",
                "definition": "per timed step and stage: busy = the summed event times, bubble = 1 - busy / "
                              "step time (the slowest rank's, as step_times_s); the figure is the median over "
                              "the timed steps",
                "per_stage": stage_busy}
            details["host_call_timing"] = {
                "method": "time.perf_counter, time.thread_time and getrusage around each call BusyTimer times, "
                          "over the timed steps: per rank, step and kind of call, [the host's wall time inside the "
                          "calls, the calling thread's CPU time in them, its system time, its minor page faults, "
                          "the process's minor page faults]",
                "per_rank": [{"rank": g_["rank"], "per_step": g_["host_calls"]} for g_ in gathered]}
            s0 = stage_busy[0]
            # "call_spans": busy is the union of the timed calls' event spans (README, "The pipeline
            # bubble"), not of the GPU's kernels; trainsim validate compares it with the replay's same
            # quantity.
            doc["measured"]["busy"] = {"definition": "call_spans", "compute_s": s0["compute_s"],
                                       "optimizer_s": s0["optimizer_s"], "bubble_fraction": s0["bubble_fraction"]}
        write_json(os.path.join(out, f"{name}.json"), doc)
        log(f"{name}: step {med:.4f} s (spread {doc['measured']['step_time_spread']:.3f}), peak alloc "
            f"{max(doc['measured']['peak_allocated_bytes'])/2**30:.2f} GiB, reserved "
            f"{max(doc['measured']['peak_reserved_bytes'])/2**30:.2f} GiB")



def pipeline_busy(gathered, step_times):
    """Per stage: busy seconds per timed step (compute, optimizer), bubble per step and their medians."""
    out = []
    for g_ in gathered:
        compute, optimizer, bubble, calls = [], [], [], {}
        for i, b in enumerate(g_["busy"]):
            c = sum(v for k, v in b.items() if not k.endswith("_calls") and k != "optimizer")
            o = b.get("optimizer", 0.0)
            compute.append(c)
            optimizer.append(o)
            bubble.append(min(1.0, max(0.0, 1.0 - (c + o) / step_times[i])))
            for k, v in b.items():
                if k.endswith("_calls"):
                    calls[k[:-len("_calls")]] = v
        out.append({"rank": g_["rank"], "compute_s_per_step": compute, "optimizer_s_per_step": optimizer,
                    "bubble_fraction_per_step": bubble, "calls_per_step": calls,
                    "compute_s": statistics.median(compute), "optimizer_s": statistics.median(optimizer),
                    "bubble_fraction": statistics.median(bubble)})
    return out


def normalize(d, defaults, out):
    cfg = dict(defaults)
    for k, v in d.items():
        cfg[k.replace("-", "_")] = v
    cfg["out"] = out
    for req in ("stack", "layers", "hidden", "heads", "name"):
        if cfg.get(req) is None:
            raise SystemExit(f"configuration needs {req}: {d}")
    if "command" not in cfg:
        opts = []
        for k in ("stack", "layers", "hidden", "heads", "vocab", "seq", "micro_batch", "grad_accum",
                  "micro_batches", "steps", "warmup", "name"):
            if cfg.get(k) not in (None, 0) or k in ("grad_accum",):
                opts += ["--" + k.replace("_", "-"), str(cfg[k])]
        if cfg.get("no_trace"):
            opts.append("--no-trace")
        if cfg.get("trace_cuda_only"):
            opts.append("--trace-cuda-only")
        if cfg.get("trace_all_ranks"):
            opts.append("--trace-all-ranks")
        if (cfg.get("trace_steps") or 1) != 1:
            opts += ["--trace-steps", str(cfg["trace_steps"])]
        launcher = "python3" if WORLD == 1 else f"torchrun --standalone --nproc-per-node {WORLD}"
        cfg["command"] = f"{launcher} {SCRIPT} " + " ".join(shlex.quote(o) for o in opts) + " --out OUT"
    return cfg


def state_of(out, name):
    if os.path.exists(os.path.join(out, f"{name}.json")):
        return "done"
    if any(f.startswith(f"{name}.failed.") for f in os.listdir(out)):
        return "failed"
    if os.path.exists(os.path.join(out, f"{name}.started")):
        return "crashed"
    return "pending"


def main():
    args = parser().parse_args()
    os.makedirs(args.out, exist_ok=True)
    defaults = {k: v for k, v in vars(args).items() if k not in ("plan", "out", "deadline")}
    if args.plan:
        with open(args.plan) as f:
            plan = [normalize(d, defaults, args.out) for d in json.load(f)]
    else:
        plan = [normalize({}, defaults, args.out)]
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
