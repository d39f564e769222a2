#!/usr/bin/env python3
"""scale(capture at size X, size Y) equals the capture at size Y: ops, shapes, strides, bytes,
FLOPs, kernels, buffers and memory, byte for byte of the document (provenance aside), for the
hand-written MLP and Llama-like models under several precisions, optimizers and checkpointing; a
fixed symbol (b = 1 at capture) refuses to scale; a model whose ops depend on s = P (a mask sliced
to the sequence) is captured with P tied to s there, and scales only where P stays s."""
import _common

_common.require_torch()
from trainsim_capture import examples, jsonio  # noqa: E402
from trainsim_capture.scale import scale, ScaleError  # noqa: E402

c = _common.Checks("test_scaling")
cases = [
    (examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}, (2, 4), {"h": 16, "f": 24, "V": 70}, (3, 6),
     dict(precision="fp32", optimizer="adamw-foreach")),
    (examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}, (2, 4), {"h": 24, "f": 40, "V": 33}, (4, 10),
     dict(precision="bf16", optimizer="adamw-forloop", recompute=True)),
    (examples.llama_like, {"h": 32, "a": 4, "kv": 2, "d": 8, "f": 48, "V": 64}, (2, 8),
     {"h": 48, "a": 6, "kv": 3, "d": 16, "f": 40, "V": 90}, (3, 12),
     dict(precision="autocast-bf16", optimizer="adamw-foreach", recompute=True)),
    (examples.llama_like, {"h": 32, "a": 4, "kv": 2, "d": 8, "f": 48, "V": 64}, (2, 8),
     {"h": 40, "a": 8, "kv": 2, "d": 8, "f": 64, "V": 50}, (2, 16),
     dict(precision="fp32", optimizer="adamw-forloop", optimizer_device="cpu")),
]
for fac, d1, (b1, s1), d2, (b2, s2), kw in cases:
    name = f"{fac.__name__} {kw}"
    x = _common.capture_module(fac, d1, 5, b1, s1, **kw)
    y = _common.capture_module(fac, d2, 5, b2, s2, **kw)
    change = dict(d2)
    if "a" in change and "kv" in change:
        change["g"] = change.pop("a") // change["kv"]
    change.update(b=b2, s=s2)
    z = scale(x, change)
    for doc in (y, z):
        doc.pop("provenance")
    a, b = jsonio.dumps(z), jsonio.dumps(y)
    diff = next((f"{p!r} vs {q!r}" for p, q in zip(a.splitlines(), b.splitlines()) if p != q), "")
    c.check(a == b, f"scaled == captured: {name}", diff[:600])
    z2 = scale(x, {"L": 40})
    c.eq(z2["model"]["layers"], 40, f"scaling the layer count: {name}")
    c.check(z2["memory"]["peak_bytes"] > x["memory"]["peak_bytes"], "more layers, higher peak")

one = _common.capture_module(examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}, 4, 1, 4, precision="fp32",
                             optimizer="adamw-foreach")
c.eq(one["symbol_space"]["fixed"].get("b"), 1, "b = 1 at capture is fixed")
try:
    scale(one, {"b": 2})
    c.check(False, "scaling a fixed symbol is refused")
except ScaleError as e:
    c.check("fixed" in str(e), "scaling a fixed symbol is refused", str(e))
try:
    scale(x, {"a": 8})
    c.check(False, "scaling a tied symbol is refused")
except ScaleError as e:
    c.check("tied" in str(e), "scaling a tied symbol is refused", str(e))

# s = P: the full slice runs no op, the generic sizes (P > s) would slice: P is tied to s
from masked_model import masked_model  # noqa: E402
kw = dict(precision="fp32", optimizer="adamw-foreach")
full = _common.capture_module(masked_model, {"h": 16, "V": 50, "P": 8}, 3, 2, 8, **kw)
c.eq(full["symbol_space"]["ties"], {"P": "s"}, "a mask spanning the sequence: P tied to s")
part = _common.capture_module(masked_model, {"h": 16, "V": 50, "P": 12}, 3, 2, 8, **kw)
c.check("P" in part["symbol_space"]["independent"], "a mask longer than the sequence: P independent",
        str(part["symbol_space"]))
c.check(len(full["layers"][0]["phases"]["forward"]["ops"]) < len(part["layers"][0]["phases"]["forward"]["ops"]),
        "the whole-buffer slice runs one op fewer")
y = _common.capture_module(masked_model, {"h": 24, "V": 40, "P": 16}, 3, 3, 16, **kw)
z = scale(full, {"h": 24, "V": 40, "b": 3, "s": 16})
for doc in (y, z):
    doc.pop("provenance")
a, b = jsonio.dumps(z), jsonio.dumps(y)
c.check(a == b, "scaled == captured with P tied to s",
        next((f"{p!r} vs {q!r}" for p, q in zip(a.splitlines(), b.splitlines()) if p != q), "")[:600])
try:
    scale(full, {"s": 6, "P": 8})
    c.check(False, "scaling P apart from s is refused")
except ScaleError as e:
    c.check("P" in str(e), "scaling P apart from s is refused", str(e))

# several layer kinds (the committed Gemma 3 capture: five sliding-window layers to one full): L layers
# repeat the pattern; 26 layers = 4 periods and 2 more sliding ones, worked by hand
import gzip  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
g3 = json.load(gzip.open(os.path.join(os.path.dirname(__file__), "..", "..", "workloads", "captures", "hf",
                                      "gemma3_text.autocast-bf16.json.gz")))
g26 = scale(g3, {"L": 26})
c.eq(g26["model"]["layer_counts"], {"full_attention": 4, "sliding_attention": 22}, "Gemma 3 at 26 layers: 22 sliding, 4 full")
c.eq(g26["model"]["layer_sequence"], [["sliding_attention", 5], ["full_attention", 1]] * 4 + [["sliding_attention", 2]],
     "Gemma 3 at 26 layers: the pattern repeated, cut after two sliding layers")
c.eq({k: v for k, v in g26["symbols"].items() if k.startswith("L")}, {"L": 26, "L_full_attention": 4, "L_sliding_attention": 22},
     "the layer symbols follow the counts")

c.done()
