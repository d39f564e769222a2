#!/usr/bin/env python3
"""Run the validation matrix for one GPU count under a time budget.

    python3 drive.py --gpus 2 --out $OUT/runs --budget-s 240
    python3 drive.py --smoke --out $OUT/smoke          (one GPU, tiny model, every stack's code path)
    python3 drive.py --gpus 4 --print-plan --gpu-name "NVIDIA H200" --gpu-mem-mib 143771

It reads the GPU (nvidia-smi), picks the two model sizes of each configuration (a ~350M GPT and the
largest one whose estimated peak stays under --fill of the GPU's memory), writes plan.json and runs it
with run_step.py --plan in one process group (torchrun for several GPUs), starting the plan again if a
configuration kills it (run_step.py skips what is finished, failed or was running). A big configuration
that runs out of memory is retried once with fewer layers, time allowing. Small configurations run
first, so a short budget loses sizes, not stacks.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

V, S = 50304, 2048
SMALL = dict(layers=24, hidden=1024, heads=16)  # GPT-2 medium shape: 356M parameters with V=50304, s=2048


def params(L, h):
    return L * (12 * h * h + 13 * h) + V * h + S * h + 2 * h


def estimate(stack, L, h, n, mb, ga=1, M=None):
    """Rough peak GPU bytes of one rank (the most loaded one for pipelines)."""
    Pl = 12 * h * h + 13 * h
    P = params(L, h)
    logits = 16 * mb * S * V
    ws = 1.5e9  # cuBLAS/NCCL workspaces, allocator slack
    if stack in ("single", "ddp"):
        return 18 * P + L * 44 * mb * S * h + logits + ws
    if stack == "fsdp2-zero2":
        return 16 * P / n + 2 * P + L * 38 * mb * S * h + logits + 6 * Pl + ws
    if stack == "fsdp2-zero3":
        return 16 * P / n + 8 * Pl + 2 * V * h + L * 38 * mb * S * h + logits + 6 * Pl + ws
    if stack == "fsdp2-offload":
        return 8 * Pl + 2 * V * h + L * 38 * mb * S * h + logits + 6 * Pl + ws
    if stack.startswith("pipe"):
        per = -(-L // n)
        inflight = M if stack == "pipe-gpipe" else n
        stage0 = 18 * (per * Pl + V * h + S * h) + inflight * per * 44 * mb * S * h
        last_inflight = M if stack == "pipe-gpipe" else 1
        # the last stage keeps each in-flight micro-batch's bf16 logits and fp32 log-softmax
        last = 18 * (per * Pl + V * h) + last_inflight * (per * 44 * mb * S * h + 6 * mb * S * V) + 10 * mb * S * V
        return max(stage0, last) + ws
    raise ValueError(stack)


SHAPES = [(2048, 16), (2560, 20), (3072, 24), (4096, 32), (5120, 40), (6144, 48), (8192, 64)]


def biggest(stack, n, mem, fill, mb, ga=1, M=None, multiple=4):
    """Widest shape of SHAPES whose deepest fitting stack is at least h/160 layers deep."""
    best = None
    for h, a in SHAPES:
        L = 0
        while estimate(stack, L + multiple, h, n, mb, ga, M) <= fill * mem and L < 200:
            L += multiple
        if L >= max(8, h / 160):
            best = (L, h, a)
    return best


def gpu_tag(name):
    n = name.lower()
    for t in ("gh200", "h200", "h100", "a100", "b200"):
        if t in n:
            return t
    return "gpu"


def build_plan(n, gpu_name, mem_bytes, fill, smoke=False):
    tag = f"{gpu_tag(gpu_name)}x{n}"
    plan = []

    def add(stack, L, h, a, mb, ga=1, M=0, size="small", steps=5, warmup=2, time_limit=90, min_left=20,
            fallback=None):
        work = f"mb{mb}x{M}" if stack.startswith("pipe") else f"mb{mb}x{ga}"
        name = f"{tag}_{stack}_L{L}-h{h}_{work}"
        d = dict(stack=stack, layers=L, hidden=h, heads=a, vocab=V, seq=S, micro_batch=mb, grad_accum=ga,
                 model_name=f"validation-gpt-L{L}-h{h}",
                 micro_batches=M, steps=steps, warmup=warmup, name=name, time_limit=time_limit,
                 min_left=min_left, size=size, estimate_bytes=int(estimate(stack, L, h, n, mb, ga, M or None)),
                 params=params(L, h))
        if fallback:
            d["fallback"] = fallback
        plan.append(d)

    if smoke:
        stacks = ["single", "ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload", "pipe-gpipe", "pipe-1f1b"]
        for st in stacks:
            add(st, 2, 256, 4, 2, ga=2, M=2, steps=1, warmup=1, time_limit=60, min_left=5)
        return plan

    dp_stacks = ["single"] if n == 1 else ["ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload"]
    pipe_stacks = [] if n == 1 else ["pipe-gpipe", "pipe-1f1b"]
    # Small first: every stack at ~350M.
    for st in dp_stacks:
        add(st, SMALL["layers"], SMALL["hidden"], SMALL["heads"], 4, ga=2, steps=8)
    for M in (2 * n, 4 * n):
        for st in pipe_stacks:
            add(st, SMALL["layers"], SMALL["hidden"], SMALL["heads"], 2, M=M, steps=8)
    # Then one near the memory limit each.
    for st in dp_stacks:
        if st == "fsdp2-offload":
            # Offload's limit is host memory, not the GPU's; its size is capped by the CPU optimizer's
            # time (and by host memory that grows as it is touched): the ~2.7B GPT-3 XL-like shape.
            L, h, a = 32, 2560, 20
            add(st, L, h, a, 1, ga=2, size="big", steps=4, warmup=1, time_limit=240, min_left=90)
            continue
        L, h, a = biggest(st, n, mem_bytes, fill, 1, 2)
        add(st, L, h, a, 1, ga=2, size="big", steps=6, warmup=2, time_limit=180, min_left=50,
            fallback=max(4, int(L * 0.8) // 4 * 4))
    for M in (2 * n, 4 * n):
        for st in pipe_stacks:
            L, h, a = biggest(st, n, mem_bytes, fill, 1, M=M, multiple=n)
            add(st, L, h, a, 1, M=M, size="big", steps=6, warmup=2, time_limit=180, min_left=50,
                fallback=max(n, int(L * 0.8) // n * n))
    return plan


def extra_plan(n, gpu_name, path, mem=None, fill=0.85):
    """Explicit configurations (a file of {"gpus", "stack", "layers", "hidden", "heads", "micro_batch",
    "grad_accum" or "micro_batches", "why", optional "steps" (default 6) and "size" (default big)}), for
    reruns. With mem, a configuration whose estimate exceeds fill x mem is skipped (said on stdout): a
    rerun on a smaller GPU keeps only what fits there, rather than shrinking it to another model."""
    tag = f"{gpu_tag(gpu_name)}x{n}"
    plan = []
    for e in json.load(open(path)):
        if e["gpus"] != n:
            continue
        est = estimate(e["stack"], e["layers"], e["hidden"], n, e["micro_batch"], e.get("grad_accum", 1),
                       e.get("micro_batches") or None)
        if mem is not None and est > fill * mem:
            print(f"[drive] skipped {e['stack']} L{e['layers']}-h{e['hidden']}: estimate {est/2**30:.1f} GiB over "
                  f"{fill} x {mem/2**30:.1f} GiB", flush=True)
            continue
        st, L, h, a, mb = e["stack"], e["layers"], e["hidden"], e["heads"], e["micro_batch"]
        ga, M = e.get("grad_accum", 1), e.get("micro_batches", 0)
        work = f"mb{mb}x{M}" if st.startswith("pipe") else f"mb{mb}x{ga}"
        multiple = n if st.startswith("pipe") else 4
        plan.append(dict(stack=st, layers=L, hidden=h, heads=a, vocab=V, seq=S, micro_batch=mb, grad_accum=ga,
                         model_name=f"validation-gpt-L{L}-h{h}", micro_batches=M, steps=e.get("steps", 6), warmup=2,
                         name=f"{tag}_{st}_L{L}-h{h}_{work}", time_limit=180, min_left=40, size=e.get("size", "big"),
                         estimate_bytes=int(estimate(st, L, h, n, mb, ga, M or None)), params=params(L, h),
                         fallback=max(multiple, int(L * 0.8) // multiple * multiple), why=e.get("why", "")))
    return plan


def gpu_info():
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis:
        idx = [int(x) for x in vis.split(",") if x.strip()]
        out = [out[i] for i in idx]
    name, mib = out[0].split(",")
    return name.strip(), int(mib) * 2**20, len(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--fill", type=float, default=0.85, help="estimated peak / GPU memory for the big size")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--print-plan", action="store_true")
    ap.add_argument("--gpu-name")
    ap.add_argument("--gpu-mem-mib", type=int)
    ap.add_argument("--extra", help="run only the configurations of this file for --gpus (see extra_plan)")
    ap.add_argument("--small-only", action="store_true",
                    help="run only the ~350M size of each configuration (a repeat launch of the host-bound class)")
    ap.add_argument("--stacks", nargs="+", help="run only these stacks' configurations (a repeat of some rows)")
    ap.add_argument("--steps", type=int, help="timed steps of every configuration (default: the plan's)")
    args = ap.parse_args()

    if args.gpu_name:
        name, mem = args.gpu_name, args.gpu_mem_mib * 2**20
    else:
        name, mem, seen = gpu_info()
        if seen < args.gpus:
            raise SystemExit(f"{args.gpus} GPUs asked for, {seen} visible")
    if args.extra:
        plan = extra_plan(args.gpus, name, args.extra, None if args.print_plan else mem, args.fill)
    else:
        plan = build_plan(1 if args.smoke else args.gpus, name, mem, args.fill, smoke=args.smoke)
        if args.small_only:
            plan = [d for d in plan if d["size"] == "small"]
    if args.stacks:
        plan = [d for d in plan if d["stack"] in args.stacks]
    if args.steps:
        for d in plan:
            d["steps"] = args.steps
    if args.print_plan:
        for d in plan:
            print(f"{d['name']:55s} {d['params']/1e9:7.3f} B  est {d['estimate_bytes']/2**30:7.1f} GiB"
                  f" of {mem/2**30:.1f}")
        return
    os.makedirs(args.out, exist_ok=True)
    t_end = time.time() + args.budget_s
    n = 1 if args.smoke else args.gpus
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1",
               PYTHONUNBUFFERED="1", TORCH_NCCL_ASYNC_ERROR_HANDLING="3")
    retried = set()
    for attempt in range(12):
        with open(os.path.join(args.out, "plan.json"), "w") as f:
            json.dump(plan, f, indent=1)
        left = t_end - time.time()
        if left < 15:
            break
        if n == 1:
            cmd = [sys.executable, os.path.join(HERE, "run_step.py")]
        else:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}"]
            cmd += [os.path.join(HERE, "run_step.py")]
        cmd += ["--plan", os.path.join(args.out, "plan.json"), "--out", args.out, "--deadline", str(t_end)]
        print(f"[drive] launch {attempt}: {' '.join(cmd)} ({left:.0f} s left)", flush=True)
        try:
            rc = subprocess.run(cmd, env=env, timeout=left + 30).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        print(f"[drive] launch {attempt} ended: {rc}", flush=True)
        files = os.listdir(args.out)
        pending = False
        for d in list(plan):
            nm = d["name"]
            if f"{nm}.json" in files:
                continue
            fails = [f for f in files if f.startswith(f"{nm}.failed.")]
            if not fails and f"{nm}.started" not in files:
                pending = True
                continue
            reasons = set()
            for f in fails:
                try:
                    reasons.add(json.load(open(os.path.join(args.out, f))).get("reason"))
                except Exception:
                    pass
            if not fails:
                with open(os.path.join(args.out, f"{nm}.failed.rank0.json"), "w") as f:
                    json.dump({"name": nm, "rank": 0, "reason": "crashed", "error": "the process group ended "
                               "while it ran (no rank recorded an error)"}, f)
            if "oom" in reasons and d.get("fallback") and nm not in retried:
                retried.add(nm)
                L2 = d["fallback"]
                nd = dict(d, layers=L2, name=nm.replace(f"_L{d['layers']}-", f"_L{L2}-"),
                          model_name=f"validation-gpt-L{L2}-h{d['hidden']}",
                          params=params(L2, d["hidden"]), retry_of=nm)
                nd.pop("fallback")
                plan.append(nd)
                pending = True
                print(f"[drive] {nm}: out of memory, retrying with {L2} layers", flush=True)
        if not pending:
            break
    with open(os.path.join(args.out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    print("[drive] done", flush=True)


if __name__ == "__main__":
    main()
