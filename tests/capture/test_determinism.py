#!/usr/bin/env python3
"""The same capture twice gives the same bytes: two separate processes (different hash seeds, so
any dependence on set or dict order of unordered things would show) through the CLI."""
import os
import tempfile

import _common

_common.require_torch()
c = _common.Checks("test_determinism")
args = ["--module", "trainsim_capture.examples:llama_like", "--dims", "h=32,a=4,kv=2,d=8,f=48,V=64", "--layers", "6",
        "--micro-batch", "2", "--seq", "8", "--precision", "autocast-bf16", "--optimizer", "adamw-foreach",
        "--recompute", "--device", "cpu", "-q"]
with tempfile.TemporaryDirectory() as tmp:
    outs = []
    for seed in ("1", "2"):
        path = os.path.join(tmp, f"c{seed}.json")
        r = _common.run_cli(args + ["-o", path], env={"PYTHONHASHSEED": seed})
        c.eq(r.returncode, 0, f"capture {seed} exits 0" + (f" ({r.stderr[-500:]})" if r.returncode else ""))
        outs.append(open(path, "rb").read() if os.path.exists(path) else b"")
    c.check(outs[0] and outs[0] == outs[1], "two captures are byte for byte the same")
    c.check(b"timestamp" not in outs[0] and b"date" not in outs[0], "no timestamps in the document")
c.done()
