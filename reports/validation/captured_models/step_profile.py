"""One more training step of a measured run, profiled: where its GPU time and its peak memory go, for
locating a row's error against the replay (measure.py run --step-profile FILE; needs a CUDA GPU).

Writes one JSON document (kind trainsim.step_profile):
  kernels: the step under torch.profiler (CPU and CUDA activities, input shapes recorded). Each ATen op
      that launched kernels, grouped by (op, input shapes, input dtypes): calls, the kernels' GPU time,
      the kernels' names; every kernel name with its calls and GPU time; the step's wall time and the
      sum of all kernel time.
  memory: the next step under torch.cuda.memory._record_memory_history (Python frames). The allocator's
      trace is replayed (alloc adds a block, free_completed removes it) from what was allocated when
      the recording began; at the step's peak the live blocks are grouped by where they were allocated
      (the first frame in the model's or the run's code, else the innermost frame; backward's blocks
      have no Python frame) with their count and bytes as requested.
"""
import time

SCHEMA_VERSION = 1
OWN_CODE = ("transformers/", "hand_models.py", "measure.py", "trainsim_capture/")


def _kernel_time_us(k):
    for name in ("duration", "device_time", "cuda_time"):
        v = getattr(k, name, None)
        if v is not None:
            return float(v)
    return 0.0


def kernels(torch, train_step, sync):
    from torch.profiler import ProfilerActivity, profile
    sync()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        train_step("profiled step")
        sync()
    wall_s = time.perf_counter() - t0
    ops, names = {}, {}
    total_us = 0.0
    for e in prof.events():
        ks = list(getattr(e, "kernels", None) or [])
        if not ks:
            continue
        shapes = [list(s) if isinstance(s, (list, tuple)) else s for s in (getattr(e, "input_shapes", None) or [])]
        dtypes = list(getattr(e, "input_dtypes", None) or [])
        key = (e.name, repr(shapes), repr(dtypes))
        g = ops.setdefault(key, {"op": e.name, "input_shapes": shapes, "input_dtypes": dtypes, "calls": 0,
                                 "kernel_us": 0.0, "kernels": set()})
        g["calls"] += 1
        for k in ks:
            us = _kernel_time_us(k)
            g["kernel_us"] += us
            g["kernels"].add(k.name)
            n = names.setdefault(k.name, {"kernel": k.name, "calls": 0, "us": 0.0})
            n["calls"] += 1
            n["us"] += us
            total_us += us
    op_rows = sorted(ops.values(), key=lambda g: -g["kernel_us"])
    for g in op_rows:
        g["kernels"] = sorted(g["kernels"])
        g["kernel_us"] = round(g["kernel_us"], 1)
    kernel_rows = sorted(names.values(), key=lambda n: -n["us"])
    for n in kernel_rows:
        n["us"] = round(n["us"], 1)
    return {"step_wall_s": wall_s, "kernel_us_total": round(total_us, 1), "ops": op_rows, "kernel_names": kernel_rows}


def _site(frames):
    if not frames:
        return "(no Python frame: autograd's backward or a C++ caller)"
    for f in frames:
        fn = f.get("filename", "")
        if any(s in fn for s in OWN_CODE):
            return f"{fn.split('site-packages/')[-1]}:{f.get('line')} {f.get('name')}"
    f = frames[0]
    return f"{f.get('filename', '').split('site-packages/')[-1]}:{f.get('line')} {f.get('name')}"


def memory_at_peak(torch, train_step, sync, top=40):
    sync()
    base = torch.cuda.memory_allocated()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=2_000_000)
    try:
        train_step("memory-recorded step")
        sync()
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][torch.cuda.current_device()]
    live, now, peak, peak_live = {}, 0, 0, {}
    for ev in trace:
        a = ev.get("action")
        if a == "alloc":
            live[ev["addr"]] = (ev["size"], _site(ev.get("frames")))
            now += ev["size"]
            if now > peak:
                peak, peak_live = now, dict(live)
        elif a == "free_completed" and ev["addr"] in live:
            now -= live.pop(ev["addr"])[0]
    groups = {}
    for size, site in peak_live.values():
        g = groups.setdefault(site, {"site": site, "blocks": 0, "bytes": 0, "sizes": {}})
        g["blocks"] += 1
        g["bytes"] += size
        g["sizes"][size] = g["sizes"].get(size, 0) + 1
    rows = sorted(groups.values(), key=lambda g: -g["bytes"])[:top]
    for g in rows:
        g["sizes"] = [[s, c] for s, c in sorted(g["sizes"].items(), key=lambda x: -x[0] * x[1])[:6]]
    return {"allocated_at_start_bytes": base, "peak_above_start_bytes": peak,
            "peak_bytes": base + peak, "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(),
            "trace_events": len(trace), "live_at_peak_by_site": rows}


def profile_step(torch, train_step, sync):
    return {"schema_version": SCHEMA_VERSION, "kind": "trainsim.step_profile",
            "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
            "kernels": kernels(torch, train_step, sync), "memory": memory_at_peak(torch, train_step, sync)}
