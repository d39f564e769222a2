"""What run_step.py records around each timed step besides its time, no profiler needed: the
machine's steal (/proc/stat), Python's garbage collections, each thread's CPU time, run-queue wait
and CPU (/proc/self/task), and, for a pipeline stage, CUDA events and host timings around each call
that issues compute (BusyTimer), summed per stage by pipeline_busy."""
import gc
import gzip
import os
import resource
import statistics
import time

import torch


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


def profiled_steps(cfg, timed_step, rank):
    """The configuration's profiled step(s) after its timed ones (unless cfg["no_trace"]): every rank
    runs cfg["trace_steps"] more steps (default 1) of `timed_step`; rank 0 records them with
    torch.profiler (CPU and CUDA, or CUDA only with cfg["trace_cuda_only"]) into NAME.trace.json.gz,
    and with cfg["trace_all_ranks"] every rank R but 0 into NAME.rankR.trace.json.gz. Returns the
    trace's file name (None where this rank records none)."""
    if cfg.get("no_trace"):
        return None
    steps = cfg.get("trace_steps") or 1
    if rank != 0 and not cfg.get("trace_all_ranks"):
        for _ in range(steps):
            timed_step()
        return None
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CUDA] if cfg.get("trace_cuda_only") else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities, record_shapes=False, with_stack=False, profile_memory=False) as prof:
        for _ in range(steps):
            timed_step()
    name = cfg["name"]
    raw = os.path.join(cfg["out"], f"{name}.trace.json" if rank == 0 else f"{name}.rank{rank}.trace.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=6) as z:
        while True:
            chunk = f.read(1 << 24)
            if not chunk:
                break
            z.write(chunk)
    os.remove(raw)
    return os.path.basename(raw) + ".gz"
