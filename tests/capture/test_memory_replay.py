#!/usr/bin/env python3
"""The memory replay of a capture (replay.py, what the C++ side mirrors: representative layer,
layer offsets, first/last-layer variants, recompute inside the backward, optimizer segments)
reproduces, op by op, the allocations and frees the recorder saw in the captured model itself."""
import _common

_common.require_torch()
from trainsim_capture import examples, replay  # noqa: E402
from trainsim_capture.analyze import analyze  # noqa: E402
from trainsim_capture.capture import assemble  # noqa: E402
from trainsim_capture.emit import collect, literal_polys  # noqa: E402
from trainsim_capture.models import ModuleSource  # noqa: E402
from trainsim_capture.step import RunSpec, record_step  # noqa: E402

c = _common.Checks("test_memory_replay")
models = [(examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}),
          (examples.llama_like, {"h": 32, "a": 4, "kv": 2, "d": 8, "f": 48, "V": 64})]
runs = [dict(precision="fp32", optimizer="adamw-foreach"),
        dict(precision="fp32", optimizer="adamw-forloop"),
        dict(precision="autocast-bf16", optimizer="adamw-foreach", recompute=True),
        dict(precision="bf16", optimizer="adamw-forloop", recompute=True),
        dict(precision="autocast-bf16", optimizer="adamw-foreach", optimizer_device="cpu")]
for fac, dims in models:
    for kw in runs:
        src = ModuleSource(fac, dims, layers=3)
        run = RunSpec(2, 8, device="cpu", **kw)
        vals = src.target_values(run)
        raw = record_step(lambda: src.build(vals, src.capture_kinds()), run)
        col = collect(analyze(raw))
        literal_polys(col)
        doc = assemble(col, src, run, vals, None, raw, False)
        ops, alloc, free, base, unplaced = replay.events(doc, kinds=raw.layer_kinds)
        d = replay.direct_peak(raw)
        name = f"{fac.__name__} {kw}"
        c.eq(unplaced, 0, f"every buffer placed: {name}")
        c.check(alloc == d["alloc"] and free == d["free"] and base == d["base_bytes"],
                f"allocations and frees op by op: {name}")
        c.eq(replay.replay(doc, kinds=raw.layer_kinds)["peak_bytes"], d["peak_bytes"], f"peak: {name}")
c.done()
