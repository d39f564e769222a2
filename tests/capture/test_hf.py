#!/usr/bin/env python3
"""The Hugging Face path (config refusals aside): HFSource reads a config, sets the generic sizes,
builds the model, finds its layers, captures and scales. With transformers installed (the GPU
machines) a tiny Llama config goes through transformers itself; without it (here) a stand-in
`transformers` module with the same entry points (AutoConfig.for_model, AutoModelForCausalLM
.from_config and its _model_mapping, masking_utils) builds a Llama-like model, so the capture's
own HF plumbing is still exercised."""
import json
import os
import sys
import tempfile
import types

import _common

_common.require_torch()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

c = _common.Checks("test_hf")
try:
    import transformers  # noqa: F401
    REAL = True
except ImportError:
    REAL = False


def install_stub():
    from trainsim_capture import examples

    class StubConfig:
        model_type = "llama"

        def __init__(self, **kw):
            self.hidden_size, self.num_attention_heads, self.num_key_value_heads = 64, 4, 2
            self.head_dim, self.intermediate_size, self.vocab_size = 16, 96, 100
            self.max_position_embeddings, self.num_hidden_layers = 256, 2
            self.pad_token_id = None
            self.__dict__.update(kw)

    class Out:
        def __init__(self, loss, logits):
            self.loss, self.logits = loss, logits

    class StubModel(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            h, a, kv, d = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
            self.config = cfg
            self.model = nn.Module()
            self.model.embed_tokens = nn.Embedding(cfg.vocab_size, h)
            self.model.layers = nn.ModuleList([examples.LlamaLikeBlock(h, a, kv, d, cfg.intermediate_size)
                                               for _ in range(cfg.num_hidden_layers)])
            self.model.norm = examples.RMSNormPy(h)
            self.lm_head = nn.Linear(h, cfg.vocab_size, bias=False)
            self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d)),
                                 persistent=False)

        def forward(self, input_ids, labels=None, use_cache=False):
            b, s = input_ids.shape
            x = self.model.embed_tokens(input_ids)
            pos = torch.arange(s, device=input_ids.device)
            sys.modules["transformers"].masking_utils.find_packed_sequence_indices(pos[None, :])
            freqs = torch.outer(pos.float(), self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            for layer in self.model.layers:
                x = layer(x, cos, sin)
            logits = self.lm_head(self.model.norm(x))
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.reshape(-1))
            return Out(loss, logits)

    class AutoConfig:
        @staticmethod
        def for_model(mt, **kw):
            if mt != "llama":
                raise ValueError(f"unknown model type {mt}")
            return StubConfig(**kw)

    class AutoModelForCausalLM:
        _model_mapping = {StubConfig: StubModel}

        @staticmethod
        def from_config(cfg, **kw):
            return StubModel(cfg)

    def find_packed_sequence_indices(position_ids):
        raise AssertionError("the capture's stand-in should replace this")

    tf = types.ModuleType("transformers")
    tf.__version__ = "0.0-stand-in"
    tf.AutoConfig, tf.AutoModelForCausalLM = AutoConfig, AutoModelForCausalLM
    mu = types.ModuleType("transformers.masking_utils")
    mu.find_packed_sequence_indices = find_packed_sequence_indices
    tf.masking_utils = mu
    sys.modules["transformers"] = tf
    sys.modules["transformers.masking_utils"] = mu


if not REAL:
    install_stub()
print(f"using {'transformers ' + sys.modules['transformers'].__version__ if REAL else 'a stand-in transformers'}")

from trainsim_capture import jsonio  # noqa: E402
from trainsim_capture.capture import capture  # noqa: E402
from trainsim_capture.models import HFSource  # noqa: E402
from trainsim_capture.scale import scale  # noqa: E402
from trainsim_capture.step import RunSpec  # noqa: E402
from trainsim_capture.validate import validate  # noqa: E402

cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
       "intermediate_size": 96, "vocab_size": 100, "max_position_embeddings": 256, "num_hidden_layers": 6,
       "architectures": ["LlamaForCausalLM"]}
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "config.json")
    json.dump(cfg, open(path, "w"))
    src = HFSource(json.load(open(path)), path)
    run = RunSpec(2, 16, precision="autocast-bf16", optimizer="adamw-foreach", device="cpu")
    doc = capture(src, run)
    c.check(not validate(doc), "valid", "; ".join(validate(doc)[:3]))
    c.eq(doc["model"]["layers"], 6, "the full model's layer count from num_hidden_layers")
    c.eq(doc["model"]["captured_layers"], 3, "three captured layers")
    c.eq(doc["provenance"]["source"]["model_type"], "llama", "provenance: model_type")
    c.check("h" in doc["symbol_space"]["independent"], "head_dim set apart: h independent of a*d",
            doc["symbol_space"])
    q = [o for o in doc["layers"][0]["phases"]["forward"]["ops"] if o.get("gemm", {}).get("role") == "q_proj"]
    c.check(q and q[0]["gemm"]["n_expr"] == "a*d" and q[0]["gemm"]["k_expr"] == "h",
            "q_proj: n = a*d (heads x head_dim), k = h", q[0]["gemm"] if q else None)
    c.check(any("packed-sequence" in s for s in doc["stand_ins"]), "stand-in for packed-sequence detection listed")
    cfg2 = dict(cfg, hidden_size=96, num_attention_heads=6, num_key_value_heads=3, head_dim=8, intermediate_size=80,
                vocab_size=77)
    path2 = os.path.join(tmp, "config2.json")
    json.dump(cfg2, open(path2, "w"))
    run2 = RunSpec(3, 24, precision="autocast-bf16", optimizer="adamw-foreach", device="cpu")
    doc2 = capture(HFSource(json.load(open(path2)), path2), run2)
    z = scale(doc, {"h": 96, "kv": 3, "g": 2, "d": 8, "f": 80, "V": 77, "b": 3, "s": 24})
    for d in (z, doc2):
        d.pop("provenance")
    a, b = jsonio.dumps(z), jsonio.dumps(doc2)
    diff = next((f"{p!r} vs {q!r}" for p, q in zip(a.splitlines(), b.splitlines()) if p != q), "")
    c.check(a == b, "scaled == captured through the HF path", diff[:500])
    from trainsim_capture.scale import scale_to_config, ScaleError
    z2 = scale_to_config(doc, dict(cfg2, num_hidden_layers=6), micro_batch=3, seq=24)
    z2.pop("provenance")
    c.check(jsonio.dumps(z2) == b, "scale_to_config(capture, config.json) == the capture of that config")
    try:
        scale_to_config(doc, dict(cfg2, model_type="llama"), micro_batch=1, seq=24)
        c.check(True, "scaling to b = 1 from a b = 2 capture is allowed (b is a symbol)")
    except ScaleError as e:
        c.check(False, "scaling to b = 1 from a b = 2 capture is allowed (b is a symbol)", str(e))
    except AssertionError:
        pass
c.done()
