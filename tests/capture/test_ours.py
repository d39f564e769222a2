#!/usr/bin/env python3
"""Our validation scripts' models (reports/validation/scripts/model.py GPT, model_llama.py Llama)
capture on the PyTorch at hand through the trainsim_capture.ours factories: on 1.13 with the
stand-ins (SDPA's math path, nn.RMSNorm), on 2.x with flash attention where the rule picks it. The
GEMMs carry their Linear's role and Megatron split; the capture is valid and scalable."""
import _common

_common.require_torch()
from trainsim_capture import ours  # noqa: E402
from trainsim_capture.validate import validate  # noqa: E402

c = _common.Checks("test_ours")
split = {("fwd", "column"): "n", ("fwd", "row"): "k", ("dgrad", "column"): "k", ("dgrad", "row"): "n"}
for fac, dims, roles in [
        (ours.gpt, {"h": 64, "a": 4, "f": 256, "V": 100, "P": 32}, {"qkv": "column", "proj": "row",
                                                                    "fc1": "column", "fc2": "row"}),
        (ours.llama, {"h": 64, "a": 4, "kv": 2, "f": 96, "V": 100}, {"qkv": "column", "proj": "row",
                                                                     "gate_up": "column", "down": "row"})]:
    doc = _common.capture_module(fac, dims, 6, 2, 16, precision="autocast-bf16", optimizer="adamw-foreach")
    name = fac.__name__
    c.check(not validate(doc), f"{name}: valid", "; ".join(validate(doc)[:3]))
    c.check(doc["scalable"], f"{name}: scalable")
    L = doc["layers"][0]
    g = [o["gemm"] for ph in ("forward", "backward") for o in L["phases"][ph]["ops"] if "gemm" in o and
         o["gemm"].get("role")]
    c.eq(sorted({x["role"] for x in g}), sorted(roles), f"{name}: GEMM roles")
    c.eq(sorted((x["role"], x["pass"]) for x in g), sorted((r, p) for r in roles for p in ("fwd", "dgrad", "wgrad")),
         f"{name}: each Linear's forward, input-gradient and weight-gradient GEMM")
    ok = all(x["tp"]["mode"] == roles[x["role"]] and x["tp"].get("split") ==
             split.get((x["pass"], x["tp"]["mode"]), x["tp"].get("split")) for x in g)
    c.check(ok, f"{name}: Megatron modes and split dimensions", [(x["role"], x["pass"], x["tp"]) for x in g])
    head = [o for o in doc["phases"]["head.forward"]["ops"] if "gemm" in o]
    c.check(head and head[0]["gemm"]["tp"]["mode"] == "vocab", f"{name}: the LM head is vocabulary-parallel")
    attn = [o for o in L["phases"]["forward"]["ops"] if o["class"] in ("attention_fwd", "batched_gemm")]
    c.check(attn, f"{name}: attention recorded (flash on 2.x, SDPA's math products on 1.13)")
c.done()
