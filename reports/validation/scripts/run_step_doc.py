"""The measured-run document run_step.py writes for one configuration (reports/validation/README.md
documents the schema): its provenance, trainsim strategy, stack details and what was measured, from
what run_config gathered on every rank; also writes the configuration's trainsim model file."""
import datetime
import os
import socket
import statistics

import torch

from model import config_param_count, is_llama, write_config_model_json
from run_step_probes import pipeline_busy

SCRIPT = "reports/validation/scripts/run_step.py"


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


def measured_run_doc(m):
    """The measured run of one configuration (rank 0 calls it): `m` holds run_config's results
    (types.SimpleNamespace: gathered, step_times, stack, pipe, dp, pp, ga, mb, global_batch,
    schedule_name, name, out, cfg, s, opt_impl, last_loss, details, warm_times, trace_name,
    build_s, steal, wall_starts, host_optimizer, timed_calls, world)."""
    gathered, step_times, stack, pipe, dp, pp, ga, mb, global_batch, schedule_name = (
        m.gathered, m.step_times, m.stack, m.pipe, m.dp, m.pp, m.ga, m.mb, m.global_batch, m.schedule_name)
    name, out, cfg, s, opt_impl, last_loss = m.name, m.out, m.cfg, m.s, m.opt_impl, m.last_loss
    details, warm_times, trace_name, build_s, steal, wall_starts, host_optimizer, timed_calls, world = (
        m.details, m.warm_times, m.trace_name, m.build_s, m.steal, m.wall_starts, m.host_optimizer, m.timed_calls, m.world)
    WORLD = world
    gpu = gathered[0]["gpu"]
    med = statistics.median(step_times)
    is_offload = stack == "fsdp2-offload"
    zero = {"single": 0, "ddp": 0, "fsdp2-zero2": 2, "fsdp2-zero3": 3, "fsdp2-offload": 3}.get(stack, 0)
    strategy = {"schema_version": 1, "gpus": WORLD, "dp": dp, "tp": 1, "pp": pp, "zero": zero,
                "offload_params": "cpu" if is_offload else "none",
                "offload_optimizer": "cpu" if is_offload else "none",
                "micro_batch": mb, "global_batch": global_batch, "recompute": cfg.get("recompute", "none"),
                "precision": "bf16-mixed", "seq": s}
    if schedule_name:
        strategy["schedule"] = schedule_name
    fp32_res = stack in ("single", "ddp") or pipe
    model_file = f"{name}.model.json"
    write_config_model_json(os.path.join(out, model_file), cfg, cfg.get("model_name") or name, fp32_residual=fp32_res)
    stack_name = {"single": "pytorch", "ddp": "pytorch-ddp", "fsdp2-zero2": "pytorch-fsdp",
                  "fsdp2-zero3": "pytorch-fsdp", "fsdp2-offload": "pytorch-fsdp",
                  "pipe-gpipe": "pytorch-pipelining", "pipe-1f1b": "pytorch-pipelining"}[stack]
    details.update({"run_step_stack": stack, "optimizer": f"torch.optim.AdamW({opt_impl}, lr=1e-4, "
                    "betas=(0.9, 0.95), weight_decay=0.1)", "grad_accum": ga, "attention_kernel":
                    "scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION)",
                    "gradient_clipping": "none", "data": "fixed random tokens", "loss_last_step": last_loss,
                    "params_total": config_param_count(cfg)})
    if is_llama(cfg):
        details["architecture"] = ("model_llama.py: RMSNorm, fused QKV (grouped-query), rotary embeddings, "
                                   "SwiGLU, untied head, no biases")
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
    return doc
