"""run_step.py's configurations: its options (also the keys of a --plan file's entries), a plan
entry made into a configuration with the command that reruns it alone, and where a configuration
stands in its output folder (a crashed plan resumes by skipping what is done, failed or started)."""
import argparse
import os
import shlex

from run_step_doc import SCRIPT

STACKS = ["single", "ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload", "pipe-gpipe", "pipe-1f1b"]


def parser(description):
    """run_step.py's options: one configuration's long options, also the keys of a plan's entries."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stack", choices=STACKS)
    p.add_argument("--layers", type=int)
    p.add_argument("--hidden", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--arch", choices=["gpt", "llama"], default="gpt",
                   help="model.py's GPT, or model_llama.py's decoder (RMSNorm, GQA, rotary, SwiGLU, untied head)")
    p.add_argument("--kv-heads", type=int, default=0, help="llama: key/value heads (default: --heads)")
    p.add_argument("--ffn-hidden", type=int, default=0, help="llama: the SwiGLU's hidden size (default 4 x hidden)")
    p.add_argument("--recompute", choices=["none", "full"], default="none",
                   help="full: activation checkpointing of every transformer block (run_step_stacks.Checkpointed)")
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
                        "thread), not PyTorch's operators: the host runs at nearly its unprofiled pace")
    p.add_argument("--trace-steps", type=int, default=1, help="consecutive steps in the profiled trace")
    p.add_argument("--trace-all-ranks", action="store_true", help="every rank records its trace")
    p.add_argument("--optimizer-alone", type=int, default=0,
                   help="after the run, time opt.step() this many times on its own")
    p.add_argument("--allocator-trace", action="store_true",
                   help="record the caching allocator's requests and frees from the build to the end of the timed "
                        "steps into NAME.allocator.rankR.json.gz (run_step_allocator.py)")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds one configuration may take")
    p.add_argument("--plan", help="JSON list of configurations to run in this process")
    p.add_argument("--deadline", type=float, default=0.0,
                   help="Unix time after which no further configuration of the plan starts")
    p.add_argument("--min-left", type=float, default=0.0, help="(plan entries) seconds needed before the deadline")
    return p


def normalize(d, defaults, out, world):
    """A plan entry `d` (keys as the long options, with - or _) over `defaults` (the command line's),
    with its output folder and the command that reruns it alone on `world` ranks."""
    cfg = dict(defaults)
    for k, v in d.items():
        cfg[k.replace("-", "_")] = v
    cfg["out"] = out
    for req in ("stack", "layers", "hidden", "heads", "name"):
        if cfg.get(req) is None:
            raise SystemExit(f"configuration needs {req}: {d}")
    if "command" not in cfg:
        opts = []
        for k in ("stack", "arch", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq",
                  "micro_batch", "grad_accum", "micro_batches", "recompute", "steps", "warmup", "name"):
            if cfg.get(k) not in (None, 0, "gpt", "none") or k in ("grad_accum",):
                opts += ["--" + k.replace("_", "-"), str(cfg[k])]
        if cfg.get("no_trace"):
            opts.append("--no-trace")
        if cfg.get("trace_cuda_only"):
            opts.append("--trace-cuda-only")
        if cfg.get("trace_all_ranks"):
            opts.append("--trace-all-ranks")
        if cfg.get("allocator_trace"):
            opts.append("--allocator-trace")
        if (cfg.get("trace_steps") or 1) != 1:
            opts += ["--trace-steps", str(cfg["trace_steps"])]
        launcher = "python3" if world == 1 else f"torchrun --standalone --nproc-per-node {world}"
        cfg["command"] = f"{launcher} {SCRIPT} " + " ".join(shlex.quote(o) for o in opts) + " --out OUT"
    return cfg


def state_of(out, name):
    """done, failed, crashed (started, never finished) or pending: how a plan resumes."""
    if os.path.exists(os.path.join(out, f"{name}.json")):
        return "done"
    if any(f.startswith(f"{name}.failed.") for f in os.listdir(out)):
        return "failed"
    if os.path.exists(os.path.join(out, f"{name}.started")):
        return "crashed"
    return "pending"
