#!/usr/bin/env python3
"""Host time per action of torch.distributed.pipelining, on the tiny GPT of torch_stack_dispatch.py
(hidden 64, 2 heads, sequence 64, vocabulary 512, micro-batch 1: kernels far shorter than their
launches, so host time is wall time), 2 stages of 1 layer each, GPipe and 1F1B, 2 to 16 micro-batches.

  torchrun --standalone --nproc-per-node 2 calibrate/scripts/torch_pipeline_actions.py --out DIR

Per configuration and rank, over 9 timed schedule.step() calls after 3 warm-up calls (each ending with
torch.cuda.synchronize(); the optimizer is not in the step), medians of the per-step sums of the host
wall time spent in:
  forward_one_chunk, backward_one_chunk (the stage's compute calls: module hooks, autograd, kernel
  launches, and the loss on the last stage), batch_isend_irecv (P2P op issue), work.wait() (P2P waits:
  they also hold the time the peer takes to send), and the rest of step() (schedule logic, op lists,
  micro-batch splitting, gradient scaling).
The slope of the step time over the micro-batch count is the host time per micro-batch of the
schedule; the split above says how much of it is the compute calls and how much the schedule's own.
Optionally (--row) the same for the validation rows' model (24 layers split over the stages,
micro-batch 2 x 2048 tokens, --row-micro-batches), where GPU work is not negligible; --row-only
leaves the tiny runs out, and --sync-calls synchronizes the GPU before each compute call (that wait
timed apart), so that the calls' host time holds no wait for earlier GPU work; --sync-debug lists the
synchronizing CUDA operations inside the timed steps (with the Python line that made each) and every
run records the caching allocator's retries, whole-device synchronizations and cudaMalloc/cudaFree
counts over its timed steps. --lag records a CUDA event at the start and the end of every
compute call and says, per call, how far the GPU's stream was behind the host there (the time
the GPU reached the event less the host time it was recorded at; 0 when the GPU was idle), so
that a host held back by its GPU (a full launch queue) shows as a call whose host time stretches
while the lag at its end stays near a fixed depth.
Writes DIR/torch_pipeline_actions.json (rank 0).
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reports", "validation", "scripts"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import run_step  # noqa: E402
import run_step_stacks  # noqa: E402
from model import init_weights, loss_fn  # noqa: E402

TINY = dict(hidden=64, heads=2, vocab=512, seq=64, micro_batch=1)


class Clock:
    def __init__(self, sync_calls=False, lag=False):
        self.t = {}
        self.sync_calls = sync_calls
        self.lag = lag
        self.marks = []  # with lag: (call, host start, start event, host end, end event)

    def wrap(self, owner, name, key, sync=False):
        orig = getattr(owner, name)

        def timed(*a, **k):
            if sync and self.sync_calls:
                # The GPU idle when the call starts (its earlier work and the receives queued before it
                # done): what is left of the call's host time is the host's own, not a wait for the GPU.
                t0 = time.perf_counter()
                torch.cuda.synchronize()
                self.t["sync_before_calls"] = self.t.get("sync_before_calls", 0.0) + time.perf_counter() - t0
            ev0 = None
            if sync and self.lag:
                ev0 = torch.cuda.Event(enable_timing=True)
                ev0.record()
            t0 = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                t1 = time.perf_counter()
                self.t[key] = self.t.get(key, 0.0) + t1 - t0
                if ev0 is not None:
                    ev1 = torch.cuda.Event(enable_timing=True)
                    ev1.record()
                    self.marks.append((key, t0, ev0, t1, ev1))
        setattr(owner, name, timed)
        return orig


def lag_rows(base_t, base_ev, marks):
    """Per compute call: its host time and the GPU's lag behind the host at its start and end (us)."""
    def lag(t, ev):
        return max(0.0, base_t + base_ev.elapsed_time(ev) / 1e3 - t) * 1e6
    return [{"call": k, "host": (t1 - t0) * 1e6, "lag_start": lag(t0, e0), "lag_end": lag(t1, e1)}
            for k, t0, e0, t1, e1 in marks]


def run(stack, cfg, layers_per_stage, micro_batches, samples=9, warmup=3, sync_calls=False, sync_debug=False,
        lag=False):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
    import torch.distributed.pipelining.schedules as sched_mod
    from torch.nn.attention import SDPBackend, sdpa_kernel
    S = dist.get_world_size()
    rank = dist.get_rank()
    first, last = rank == 0, rank == S - 1
    c = dict(cfg, layers=layers_per_stage * S)
    with torch.device(run_step.DEV):
        mod = run_step_stacks.Stage(c, rank * layers_per_stage, (rank + 1) * layers_per_stage, first, last)
    init_weights(mod, c["layers"])
    stage = PipelineStage(mod, rank, S, run_step.DEV)
    Sched = ScheduleGPipe if stack == "gpipe" else Schedule1F1B
    sched = Sched(stage, n_microbatches=micro_batches, loss_fn=loss_fn)
    mb = c["micro_batch"]
    x = torch.randint(0, c["vocab"], (micro_batches * mb, c["seq"]), device=run_step.DEV)
    y = torch.randint(0, c["vocab"], (micro_batches * mb, c["seq"]), device=run_step.DEV)
    clock = Clock(sync_calls, lag)
    clock.wrap(stage, "forward_one_chunk", "forward_one_chunk", sync=True)
    clock.wrap(stage, "backward_one_chunk", "backward_one_chunk", sync=True)
    restore = []
    restore.append((dist, "batch_isend_irecv", clock.wrap(dist, "batch_isend_irecv", "p2p_issue")))
    for name in ("_wait_batch_p2p",):
        if hasattr(sched_mod, name):
            restore.append((sched_mod, name, clock.wrap(sched_mod, name, "p2p_wait")))
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

    for _ in range(warmup):
        step()
        mod.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    rows = []
    stats0 = torch.cuda.memory_stats()
    caught = []
    lags = []
    for _ in range(samples):
        dist.barrier(device_ids=[run_step.LOCAL_RANK])
        torch.cuda.synchronize()
        clock.t = {}
        clock.marks = []
        base_ev = torch.cuda.Event(enable_timing=True)
        base_ev.record()  # the GPU idle: it reaches this event when the host records it
        t0 = time.perf_counter()
        if sync_debug:
            # Every synchronizing CUDA operation inside the step (not the synchronize after it) warns,
            # with the Python line that made it.
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                torch.cuda.set_sync_debug_mode("warn")
                try:
                    step()
                finally:
                    torch.cuda.set_sync_debug_mode(0)
            caught += w
        else:
            step()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        if lag:
            lags.append(lag_rows(t0, base_ev, clock.marks))
        mod.zero_grad(set_to_none=True)
        r = {k: v * 1e6 for k, v in clock.t.items()}
        r["step"] = wall * 1e6
        r["rest"] = r["step"] - sum(v for k, v in r.items() if k != "step")
        rows.append(r)
    for owner, name, orig in restore:
        setattr(owner, name, orig)
    keys = sorted({k for r in rows for k in r})
    med = {k: statistics.median(r.get(k, 0.0) for r in rows) for k in keys}
    stats1 = torch.cuda.memory_stats()
    med["allocator_during_timed_steps"] = {k: stats1.get(k, 0) - stats0.get(k, 0) for k in (
        "num_alloc_retries", "num_sync_all_streams", "num_device_alloc", "num_device_free", "num_ooms")}
    if sync_debug:
        where = {}
        for w in caught:
            key = f"{os.path.relpath(w.filename) if w.filename else '?'}:{w.lineno}: {str(w.message)[:120]}"
            where[key] = where.get(key, 0) + 1
        med["synchronizing_operations"] = dict(sorted(where.items(), key=lambda kv: -kv[1]))
    if lag:
        med["lag_per_call"] = lags
    med["step_min"] = min(r["step"] for r in rows)
    med["step_max"] = max(r["step"] for r in rows)
    gathered = [None] * S
    dist.all_gather_object(gathered, med)
    del mod, stage, sched
    torch.cuda.empty_cache()
    return gathered


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--row", action="store_true",
                    help="also the validation rows' model, L24-h1024 micro-batch 2, 24 / stages layers per stage")
    ap.add_argument("--row-micro-batches", type=int, nargs="+", default=[8],
                    help="micro-batch counts of the --row runs (default 8)")
    ap.add_argument("--row-only", action="store_true", help="with --row: leave out the tiny model's runs")
    ap.add_argument("--sync-calls", action="store_true",
                    help="synchronize the GPU before each forward_one_chunk and backward_one_chunk (timed apart, "
                         "as sync_before_calls): the calls' host time without waits for earlier GPU work")
    ap.add_argument("--lag", action="store_true",
                    help="per compute call, the GPU's lag behind the host at its start and end (CUDA events)")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads per rank (default: cores / ranks, as run_step.py)")
    ap.add_argument("--sync-debug", action="store_true",
                    help="list the synchronizing CUDA operations inside the timed steps (torch.cuda.set_sync_debug_mode)")
    a = ap.parse_args()
    if a.lag and (a.sync_calls or a.sync_debug):
        ap.error("--lag alone: --sync-calls empties the GPU's queue before each call, --sync-debug slows the host")
    if a.sync_calls and a.sync_debug:
        ap.error("--sync-calls and --sync-debug together: the synchronizations --sync-calls adds would be reported")
    os.makedirs(a.out, exist_ok=True)
    run_step.setup()
    if a.threads:
        torch.set_num_threads(a.threads)
    doc = {"schema_version": 1, "kind": "trainsim.torch_pipeline_actions", "world_size": dist.get_world_size(),
           "tiny_model": TINY, "unit": "microseconds of host wall time per step (medians over 9 steps)",
           "provenance": {"script": "calibrate/scripts/torch_pipeline_actions.py", "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(run_step.DEV), "torch": torch.__version__},
           "sync_calls": a.sync_calls, "lag": a.lag, "threads_per_rank": torch.get_num_threads(), "runs": [], "errors": []}
    out = os.path.join(a.out, "torch_pipeline_actions.json")
    plan = [] if a.row_only else [(s, TINY, 1, m) for s in ("gpipe", "1f1b") for m in (2, 4, 8, 16)]
    plan += [] if a.row_only else [(s, TINY, 4, 8) for s in ("gpipe", "1f1b")]
    if a.row:
        row = dict(hidden=1024, heads=16, vocab=50304, seq=2048, micro_batch=2)
        per = 24 // dist.get_world_size()
        plan += [(s, row, per, m) for m in a.row_micro_batches for s in ("1f1b", "gpipe")]
    for stack, cfg, L, M in plan:
        t0 = time.time()
        try:
            per_rank = run(stack, cfg, L, M, sync_calls=a.sync_calls, sync_debug=a.sync_debug, lag=a.lag)
            doc["runs"].append({"schedule": stack, "model": "tiny" if cfg is TINY else "L24-h1024",
                                "layers_per_stage": L, "micro_batches": M, "per_rank": per_rank})
        except Exception as e:  # noqa: BLE001 - keep the others
            doc["errors"].append(f"{stack} L{L} M{M}: {type(e).__name__}: {e}"[:1000])
        if dist.get_rank() == 0:
            last = doc["runs"][-1]["per_rank"] if doc["runs"] else None
            print(f"[pipeline_actions] {stack} L{L} M{M}: {time.time() - t0:.1f} s "
                  f"step {last[0]['step'] if last else 'n/a'}", flush=True)
            with open(out, "w") as f:
                json.dump(doc, f, indent=1)
    dist.barrier(device_ids=[run_step.LOCAL_RANK])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
