#!/usr/bin/env python3
"""The strict self-check (trainsim_capture.validate, the CLI's --check) accepts every capture the
tool writes and rejects documents broken in each way SCHEMA.md forbids."""
import copy
import json
import os
import tempfile

import _common

_common.require_torch()
from trainsim_capture import examples, jsonio  # noqa: E402
from trainsim_capture.validate import validate  # noqa: E402

c = _common.Checks("test_schema")
docs = {
    "mlp fp32 foreach": _common.capture_module(examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}, 4, 2, 4,
                                               precision="fp32", optimizer="adamw-foreach"),
    "llama-like autocast recompute forloop": _common.capture_module(
        examples.llama_like, {"h": 32, "a": 4, "kv": 2, "d": 8, "f": 48, "V": 64}, 4, 2, 8,
        precision="autocast-bf16", optimizer="adamw-forloop", recompute=True),
    "mlp bf16 no symbols": _common.capture_module(examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}, 4, 2, 4,
                                                  symbolic=False, precision="bf16", optimizer="none"),
}
for name, d in docs.items():
    probs = validate(json.loads(jsonio.dumps(d)))
    c.check(not probs, f"valid: {name}", "; ".join(probs[:5]))

base = docs["mlp fp32 foreach"]


def broken(fn, what, needle):
    d = copy.deepcopy(base)
    fn(d)
    probs = validate(d)
    c.check(any(needle in p for p in probs), f"rejected: {what}", "; ".join(probs[:3]) or "no problem found")


def first_op(d):
    return d["layers"][0]["phases"]["forward"]["ops"][0]


def first_gemm(d):
    return [o for o in d["layers"][0]["phases"]["forward"]["ops"] if o["class"] == "gemm"][0]


broken(lambda d: d.update(extra=1), "an unknown top-level key", "unknown keys ['extra']")
broken(lambda d: d.pop("symbols"), "a missing top-level key", "missing keys ['symbols']")
broken(lambda d: d.update(kind="other"), "a wrong kind", "trainsim.capture")
broken(lambda d: first_op(d).update({"class": "magic"}), "an unknown op class", "class 'magic'")
broken(lambda d: first_op(d).update(color="red"), "an unknown op key", "unknown keys ['color']")
broken(lambda d: first_gemm(d)["gemm"].update(m_expr="b*s+1"), "an expression that does not give its value",
       "recorded")
broken(lambda d: first_gemm(d)["in"][0].update(buf=10 ** 6), "a tensor of no buffer", "is no buffer")
broken(lambda d: d["buffers"][-1].update(alloc_bytes=d["buffers"][-1]["alloc_bytes"] + 1),
       "alloc_bytes not rounded to the block", "rounded")
broken(lambda d: [b for b in d["buffers"] if b["free"]][0]["free"].update(op=10 ** 5),
       "a free after an op the phase does not have", "beyond the phase")
broken(lambda d: [b for b in d["buffers"] if b["free"]][0]["free"].update(phase="lunch"), "an unknown phase",
       "phase 'lunch'")
broken(lambda d: [o for o in d["layers"][0]["phases"]["forward"]["ops"] if o["class"] == "view"][0].update(kernels=1),
       "a view with a kernel", "launches no kernel")
broken(lambda d: d["params"][0].update(tp="diagonal"), "an unknown parallel mode", "tp 'diagonal'")
broken(lambda d: first_op(d)["in"][0]["shape_expr"].__setitem__(0, "zz"), "an expression with an unknown symbol",
       "no value")

with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "good.json")
    jsonio.write(base, good)
    r = _common.run_cli(["--check", good])
    c.eq(r.returncode, 0, "--check of a good capture exits 0")
    bad = os.path.join(tmp, "bad.json")
    d = copy.deepcopy(base)
    d["surprise"] = True
    jsonio.write(d, bad)
    r = _common.run_cli(["--check", bad])
    c.eq(r.returncode, 2, "--check of a broken capture exits 2")
    c.check("surprise" in r.stderr, "--check names the problem", r.stderr[-300:])
c.done()
