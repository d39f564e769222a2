#!/usr/bin/env python3
"""--time's plumbing without a GPU: the step runs for real (real tensors, on the CPU here) under the
timing recorder, with a stand-in for CUDA events (perf_counter), and every captured op of the
representative layer and the ends gets its measurement by (phase, layer, index) with matching op
names. The CUDA events themselves are only exercised on a GPU."""
import time

import _common

_common.require_torch()
import torch  # noqa: E402


class _Event:
    def __init__(self, enable_timing=True):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1000.0


if not torch.cuda.is_available():
    torch.cuda.Event = _Event
    torch.cuda.is_available = lambda: True
    torch.cuda.synchronize = lambda: None
    torch.cuda.get_device_name = lambda i: "cpu (stand-in events)"

from trainsim_capture import examples  # noqa: E402
from trainsim_capture.capture import capture  # noqa: E402
from trainsim_capture.models import ModuleSource  # noqa: E402
from trainsim_capture.step import RunSpec  # noqa: E402
from trainsim_capture.timing import time_capture  # noqa: E402
from trainsim_capture.validate import validate  # noqa: E402

c = _common.Checks("test_timing_smoke")
src = ModuleSource(examples.llama_like, {"h": 32, "a": 4, "kv": 2, "d": 8, "f": 48, "V": 64}, 4)
for kw in [dict(precision="fp32", optimizer="adamw-foreach"),
           dict(precision="autocast-bf16", optimizer="adamw-forloop", recompute=True)]:
    run = RunSpec(2, 8, device="cpu", **kw)
    doc = time_capture(capture(src, run, symbolic=False), src, run, warmup=1)
    ops = [o for L in doc["layers"] for ph in L["phases"].values() for o in ph["ops"]]
    ops += [o for ph in ("embed.forward", "head.forward", "head.backward", "embed.backward")
            for o in doc["phases"][ph]["ops"]]
    c.check(all("measured_us" in o and o["measured_us"] >= 0 for o in ops), f"every op measured: {kw}",
            f"{sum('measured_us' in o for o in ops)} of {len(ops)}")
    c.eq(doc["timing"]["notes"], [], f"no op-name mismatches: {kw}")
    c.check(not validate(doc), f"valid with measurements: {kw}", "; ".join(validate(doc)[:3]))
c.done()
