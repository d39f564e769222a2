"""Llama-style decoder in plain PyTorch that trainsim can describe exactly: the modern layer of
issue 10 ("grouped-query attention, SwiGLU, RMSNorm, rotary embeddings and flash attention").

Token embedding (no position embedding); L pre-norm layers (RMSNorm, one fused QKV Linear without
bias giving `heads` query heads and `kv_heads` key/value heads, rotary embeddings on Q and K in the
rotate-half form of Llama's reference code, causal flash attention through
scaled_dot_product_attention with enable_gqa, output projection, RMSNorm, SwiGLU MLP h -> 2 x f
(gate and up in one Linear) -> f -> h, no biases); final RMSNorm; an untied LM head; cross-entropy
loss (model.py's loss_fn); no dropout. With hidden 4096, 32 heads, 8 key/value heads, FFN 14336,
vocabulary 128256 and 32 layers this is Llama 3 8B's shape (its published 8.03 B parameters).

`trainsim_model_json` writes it as trainsim's own model JSON (schema: workloads/models/gpt2-1.5b.json).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from model_doc import trainsim_model_doc

ROPE_BASE = 500000.0  # Llama 3's rotary base


def rotate_half(t):
    t1, t2 = t.chunk(2, dim=-1)
    return torch.cat((-t2, t1), dim=-1)


class Rotary(nn.Module):
    """cos and sin tables [seq, 1, head_dim] in bf16 (as Llama's reference code casts them to the
    activations' dtype), so that rotating the bf16 Q and K under autocast stays in bf16."""

    def __init__(self, seq, head_dim):
        super().__init__()
        self.seq, self.head_dim = seq, head_dim
        self.register_buffer("cos", torch.empty(seq, 1, head_dim, dtype=torch.bfloat16), persistent=False)
        self.register_buffer("sin", torch.empty(seq, 1, head_dim, dtype=torch.bfloat16), persistent=False)

    def reset(self):
        """Fills the tables (after the module reached its device; model.init_weights calls it)."""
        d, dev = self.head_dim, self.cos.device
        inv = 1.0 / ROPE_BASE ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d)
        ang = torch.outer(torch.arange(self.seq, device=dev, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)[:, None, :]
        with torch.no_grad():
            self.cos.copy_(ang.cos())
            self.sin.copy_(ang.sin())

    def forward(self, t):  # t: [b, s, heads, head_dim]
        return t * self.cos + rotate_half(t) * self.sin


class LlamaBlock(nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn_hidden, seq):
        super().__init__()
        if hidden % heads or heads % kv_heads:
            raise ValueError(f"heads ({heads}) must divide hidden ({hidden}) and kv_heads ({kv_heads}) divide heads")
        self.heads, self.kv_heads, self.d, self.ffn = heads, kv_heads, hidden // heads, ffn_hidden
        kv = kv_heads * self.d
        self.norm1 = nn.RMSNorm(hidden, eps=1e-5)
        self.qkv = nn.Linear(hidden, hidden + 2 * kv, bias=False)
        self.proj = nn.Linear(hidden, hidden, bias=False)
        self.norm2 = nn.RMSNorm(hidden, eps=1e-5)
        self.gate_up = nn.Linear(hidden, 2 * ffn_hidden, bias=False)
        self.down = nn.Linear(ffn_hidden, hidden, bias=False)
        self.rotary = Rotary(seq, self.d)

    def forward(self, x):
        b, s, h = x.shape
        kv = self.kv_heads * self.d
        q, k, v = self.qkv(self.norm1(x)).split((h, kv, kv), dim=-1)
        q = self.rotary(q.view(b, s, self.heads, self.d)).transpose(1, 2)
        k = self.rotary(k.view(b, s, self.kv_heads, self.d)).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, self.d).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        gate, up = self.gate_up(self.norm2(x)).split(self.ffn, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq):
        super().__init__()
        self.cfg = dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn_hidden=ffn_hidden,
                        vocab=vocab, seq=seq)
        self.wte = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([LlamaBlock(hidden, heads, kv_heads, ffn_hidden, seq) for _ in range(layers)])
        self.norm = nn.RMSNorm(hidden, eps=1e-5)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


def param_count(layers, hidden, heads, kv_heads, ffn_hidden, vocab):
    kv = kv_heads * (hidden // heads)
    per_layer = 2 * hidden + hidden * (hidden + 2 * kv) + hidden * hidden + 3 * hidden * ffn_hidden
    return layers * per_layer + 2 * vocab * hidden + hidden


def trainsim_model_json(name, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq, fp32_residual=False):
    description = (f"reports/validation/scripts/model_llama.py Llama-style decoder: {layers} layers, hidden {hidden}, "
                   f"{heads} query heads, {kv_heads} key/value heads, FFN {ffn_hidden} (SwiGLU), vocabulary {vocab}, "
                   f"context {seq}; pre-RMSNorm, fused QKV without bias, rotary embeddings, flash attention "
                   f"(scaled_dot_product_attention, enable_gqa), untied LM head, no dropout.")
    architecture = {
        "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "ffn_hidden": ffn_hidden,
        "vocab": vocab, "seq_len": seq, "tied_embeddings": False, "biases": False, "dropout": False,
        "norm": "rmsnorm", "mlp": "swiglu", "position": "rotary",
    }
    return trainsim_model_doc(name, description, architecture,
                              param_count(layers, hidden, heads, kv_heads, ffn_hidden, vocab),
                              "reports/validation/scripts/model_llama.py", fp32_residual)
