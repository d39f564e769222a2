"""The host side of PyTorch: its dispatcher's time per operator and per module hook, and its fused
CPU AdamW as FSDP2's CPUOffloadPolicy runs it.

sections.host_dispatch_figures and sections.cpu_optimizers turn the records into profile sections.
"""
import os
import statistics
import time

import torch

from .timing import stats

# ---------------------------------------------------------------------------------------------
# host: PyTorch's dispatch per operator and per module hook (host time; the GPU keeps up)


def host(dev, sizes=1, progress=lambda done, total: None):
    del sizes, progress  # one figure each, no sizes
    res = {}
    N = 3000

    def wall(fn, samples=5):
        out = []
        for _ in range(samples):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            out.append((time.perf_counter() - t0) / N * 1e6)
        return out
    x = torch.ones(16, device=dev)
    xg = torch.ones(16, device=dev, requires_grad=True)

    def ops():
        y = x
        for _ in range(N):
            y = y + 1.0

    def ops_grad():
        y = xg
        for _ in range(N):
            y = y + 1.0
    ops()
    ops_grad()
    res["op_no_grad_us"] = stats(wall(ops))
    res["op_autograd_us"] = stats(wall(ops_grad))
    lin = torch.nn.Linear(16, 16, device=dev)
    plain = torch.nn.Linear(16, 16, device=dev)
    lin.register_forward_pre_hook(lambda m, a: None)
    lin.register_forward_hook(lambda m, a, o: None)
    inp = torch.ones(4, 16, device=dev)

    def call(m):
        def f():
            for _ in range(N):
                m(inp)
        return f
    call(lin)()
    call(plain)()
    with_hooks = wall(call(lin))
    without = wall(call(plain))
    res["module_call_us"] = stats(without)
    res["module_call_with_two_hooks_us"] = stats(with_hooks)
    res["hook_us"] = (statistics.median(with_hooks) - statistics.median(without)) / 2
    res["note"] = ("host microseconds per operation: N = 3000 back-to-back calls on 16-element CUDA tensors, wall time "
                   "between synchronizations / N; hook_us = (module call with a forward pre-hook and a forward hook - "
                   "plain call) / 2")
    return res


# ---------------------------------------------------------------------------------------------
# cpu_adam: torch.optim.AdamW(fused=True) on CPU tensors, as FSDP2's CPUOffloadPolicy runs it


def _cpu_adam_worker(args):
    threads, params, steps, q = args
    import torch as t
    t.set_num_threads(threads)
    ps = [t.randn(params // 16, requires_grad=True) for _ in range(16)]
    for p in ps:
        p.grad = t.randn_like(p)
    opt = t.optim.AdamW(ps, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    opt.step()
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        out.append(time.perf_counter() - t0)
    q.put(out)


# Processes stepping at once (the ranks of one node that offload their optimizer).
CPU_ADAM_PROCESSES = (1, 2, 4)


def cpu_adam(dev=None, sizes=len(CPU_ADAM_PROCESSES), progress=lambda done, total: None):
    del dev  # CPU only
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    res = []
    cores = os.cpu_count() or 1
    params = 1 << 26  # 64 M parameters per process
    for i, procs in enumerate(CPU_ADAM_PROCESSES[:sizes]):
        progress(i, sizes)
        threads = max(1, cores // procs)
        q = ctx.Queue()
        ws = [ctx.Process(target=_cpu_adam_worker, args=((threads, params, 4, q),)) for _ in range(procs)]
        for w in ws:
            w.start()
        times = [q.get(timeout=300) for _ in ws]
        for w in ws:
            w.join()
        # Steps of all processes overlap (same start, same work): the slowest process's per-step time.
        per_step = [max(t[i] for t in times) for i in range(len(times[0]))]
        res.append({"what": "torch_adamw_fused_cpu", "processes": procs, "threads_per_process": threads,
                    "params_per_process": params, "step_s": stats(per_step),
                    "params_per_s_per_process": params / statistics.median(per_step),
                    "note": "fp32 parameters, gradients, exp_avg, exp_avg_sq; 16 tensors of 4 M each per process; "
                            "all processes step at once"})
    return res

