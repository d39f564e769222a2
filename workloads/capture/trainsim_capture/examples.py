"""Hand-written models that run on PyTorch 1.13 and 2.x alike (the CPU-side tests, the 70B-class
layer timing). Factories follow the `--module` contract (README.md): keyword arguments are the
capture's symbols plus `layers`; attributes say which symbols they take, their ties, where the
layers are and how the loss is computed."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _ce_loss(model, ids, targets):
    logits = model(ids)
    return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


# ---- tiny MLP block: the hand-worked test's model ---------------------------------------------

class MLPBlock(nn.Module):
    """y = x + fc2(relu(fc1(x))): fc1 [f, h] and fc2 [h, f] with biases, no norm."""

    def __init__(self, h, f):
        super().__init__()
        self.fc1 = nn.Linear(h, f)
        self.fc2 = nn.Linear(f, h)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc1(x)))


class TinyMLP(nn.Module):
    def __init__(self, layers, h, f, V):
        super().__init__()
        self.embed = nn.Embedding(V, h)
        self.layers = nn.ModuleList([MLPBlock(h, f) for _ in range(layers)])
        self.head = nn.Linear(h, V, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.layers:
            x = blk(x)
        return self.head(x)


def tiny_mlp(layers, h, f, V):
    return TinyMLP(layers, h, f, V)


tiny_mlp.trainsim_symbols = ["h", "f", "V"]
tiny_mlp.trainsim_ties = {}
tiny_mlp.trainsim_layers_attr = "layers"
tiny_mlp.trainsim_loss = _ce_loss


# ---- a Llama-like decoder written with 1.13's ops ---------------------------------------------

class RMSNormPy(nn.Module):
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(x.dtype)


def rotate_half(t):
    t1, t2 = t.chunk(2, dim=-1)
    return torch.cat((-t2, t1), dim=-1)


class LlamaLikeBlock(nn.Module):
    """RMSNorm, q/k/v/o projections (a query heads, kv key/value heads of width d, independent of
    h), rotary embeddings (cos/sin given per step), scaled_dot_product_attention with GQA, RMSNorm,
    SwiGLU MLP (gate, up, down), no biases."""

    def __init__(self, h, a, kv, d, f):
        super().__init__()
        self.a, self.kv, self.d = a, kv, d
        self.input_layernorm = RMSNormPy(h)
        self.q_proj = nn.Linear(h, a * d, bias=False)
        self.k_proj = nn.Linear(h, kv * d, bias=False)
        self.v_proj = nn.Linear(h, kv * d, bias=False)
        self.o_proj = nn.Linear(a * d, h, bias=False)
        self.post_attention_layernorm = RMSNormPy(h)
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        hn = self.input_layernorm(x)
        q = self.q_proj(hn).view(b, s, self.a, self.d).transpose(1, 2)
        k = self.k_proj(hn).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(hn).view(b, s, self.kv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv != self.a)
        x = x + self.o_proj(o.transpose(1, 2).reshape(b, s, self.a * self.d))
        hn = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(hn)) * self.up_proj(hn))


class LlamaLike(nn.Module):
    def __init__(self, layers, h, a, kv, d, f, V):
        super().__init__()
        self.d = d
        self.embed_tokens = nn.Embedding(V, h)
        self.layers = nn.ModuleList([LlamaLikeBlock(h, a, kv, d, f) for _ in range(layers)])
        self.norm = RMSNormPy(h)
        self.lm_head = nn.Linear(h, V, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d)), persistent=False)

    def forward(self, ids):
        b, s = ids.shape
        x = self.embed_tokens(ids)
        pos = torch.arange(s, device=ids.device).float()
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for blk in self.layers:
            x = blk(x, cos, sin)
        return self.lm_head(self.norm(x))


def llama_like(layers, h, a, kv, d, f, V):
    return LlamaLike(layers, h, a, kv, d, f, V)


llama_like.trainsim_symbols = ["h", "a", "kv", "d", "f", "V"]
llama_like.trainsim_ties = {"a": "kv*g"}
llama_like.trainsim_layers_attr = "layers"
llama_like.trainsim_loss = _ce_loss
