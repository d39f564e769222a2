"""GPT-style decoder in plain PyTorch that trainsim can describe exactly.

Token embedding + learned position embedding; L pre-LN layers (LayerNorm, fused QKV Linear with
bias, causal flash attention through scaled_dot_product_attention, output projection, LayerNorm,
MLP h -> 4h GELU -> h with biases); final LayerNorm; LM head tied to the token embedding;
cross-entropy loss; no dropout.

`trainsim_model_json` writes the model as trainsim's own model JSON
(schema: workloads/models/gpt2-1.5b.json).
"""
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from model_doc import trainsim_model_doc
from model_llama import Rotary


class Block(nn.Module):
    def __init__(self, hidden, heads, ffn_hidden):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=True)
        self.proj = nn.Linear(hidden, hidden, bias=True)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn_hidden, bias=True)
        self.fc2 = nn.Linear(ffn_hidden, hidden, bias=True)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q = q.view(b, s, self.heads, h // self.heads).transpose(1, 2)
        k = k.view(b, s, self.heads, h // self.heads).transpose(1, 2)
        v = v.view(b, s, self.heads, h // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq, ffn_hidden=None):
        super().__init__()
        ffn_hidden = ffn_hidden or 4 * hidden
        self.cfg = dict(layers=layers, hidden=hidden, heads=heads, vocab=vocab, seq=seq, ffn_hidden=ffn_hidden)
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList([Block(hidden, heads, ffn_hidden) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied LM head, no bias


def init_weights(module, layers):
    """GPT-2 initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2L); LayerNorm 1/0."""
    with torch.no_grad():
        for name, m in module.named_modules():
            if isinstance(m, nn.Linear):
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj", "fc2", "down")) else 0.02
                m.weight.normal_(0.0, std)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 0.02)
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()
            elif isinstance(m, getattr(nn, "RMSNorm", ())):  # torch >= 2.4
                m.weight.fill_(1.0)
            elif isinstance(m, Rotary):  # model_llama.py's cos and sin tables
                m.reset()
        for p in module.parameters(recurse=False):  # a bare head weight (pipeline last stage)
            p.normal_(0.0, 0.02)


def loss_fn(logits, targets):
    return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def param_count(layers, hidden, heads, vocab, seq, ffn_hidden=None):
    f = ffn_hidden or 4 * hidden
    per_layer = 4 * hidden + (3 * hidden * hidden + 3 * hidden) + (hidden * hidden + hidden) + \
        (hidden * f + f) + (f * hidden + hidden)
    return layers * per_layer + vocab * hidden + seq * hidden + 2 * hidden


def trainsim_model_json(name, layers, hidden, heads, vocab, seq, ffn_hidden=None, fp32_residual=False,
                        note=""):
    f = ffn_hidden or 4 * hidden
    description = (f"reports/validation/scripts/model.py GPT: {layers} layers, hidden {hidden}, {heads} heads, "
                   f"FFN {f}, vocabulary {vocab}, context {seq}; pre-LN, fused QKV with bias, flash attention "
                   f"(scaled_dot_product_attention), GELU MLP, tied LM head, no dropout. {note}").strip()
    architecture = {
        "layers": layers, "hidden": hidden, "heads": heads, "ffn_hidden": f, "vocab": vocab, "seq_len": seq,
        "tied_embeddings": True, "biases": True, "dropout": False,
        "norm": "layernorm", "mlp": "gelu", "position": "learned",
    }
    return trainsim_model_doc(name, description, architecture, param_count(layers, hidden, heads, vocab, seq, f),
                              "reports/validation/scripts/model.py", fp32_residual)


# ----------------------------------------------------------------------------------------------
# A configuration's model, whichever architecture its "arch" names ("gpt", the default: this file's
# GPT; "llama": model_llama.py's decoder, with "kv_heads" and "ffn_hidden").

def is_llama(cfg):
    return cfg.get("arch", "gpt") == "llama"


def llama_dims(cfg):
    return (cfg["layers"], cfg["hidden"], cfg["heads"], cfg.get("kv_heads") or cfg["heads"],
            cfg.get("ffn_hidden") or 4 * cfg["hidden"])


def build_model(cfg):
    """The whole model of `cfg` (layers, hidden, heads, vocab, seq and the architecture's own keys)."""
    if is_llama(cfg):
        from model_llama import Llama
        L, h, a, kv, f = llama_dims(cfg)
        return Llama(L, h, a, kv, f, cfg["vocab"], cfg["seq"])
    return GPT(cfg["layers"], cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["seq"])


def config_param_count(cfg):
    if is_llama(cfg):
        from model_llama import param_count as llama_params
        L, h, a, kv, f = llama_dims(cfg)
        return llama_params(L, h, a, kv, f, cfg["vocab"])
    return param_count(cfg["layers"], cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["seq"])


def write_config_model_json(path, cfg, name, fp32_residual=False):
    """`cfg`'s model as trainsim's model JSON at `path`."""
    if is_llama(cfg):
        from model_llama import trainsim_model_json as llama_json
        L, h, a, kv, f = llama_dims(cfg)
        doc = llama_json(name, L, h, a, kv, f, cfg["vocab"], cfg["seq"], fp32_residual=fp32_residual)
    else:
        doc = trainsim_model_json(name, cfg["layers"], cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["seq"],
                                  fp32_residual=fp32_residual)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
