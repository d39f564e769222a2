"""Two decoder-only language models written by hand in plain PyTorch, on purpose NOT the way our
validation scripts write theirs (reports/validation/scripts/model.py, model_llama.py), so that
trainsim's captures and predictions are checked on code they were not fitted to.

1. `GPT2Unfused` (factory `gpt_unfused`): GPT-2 as nanoGPT-era code writes it. Token and learned
   position embeddings; pre-LayerNorm blocks with SEPARATE query, key and value Linears (bias), the
   attention computed by hand: softmax(Q K^T / sqrt(d)) V with a materialized boolean causal mask
   (a [P, P] lower-triangular buffer per block, masked_fill with -inf; no scaled_dot_product_attention),
   an output Linear, LayerNorm, MLP h -> f with nn.GELU(approximate="tanh") -> h (bias); final
   LayerNorm; the LM head a bias-free Linear whose weight IS the token embedding (tied). Loss:
   F.cross_entropy over the shifted logits as they come out (bf16 under bf16 weights; under
   autocast the op's own fp32 policy applies).

2. `LlamaComplex` (factory `llama_complex`): a Llama as Meta's reference code writes it. Token
   embedding; pre-RMSNorm blocks (RMSNorm written out: x * rsqrt(mean(x^2) + eps) in fp32, cast
   back, times the weight); separate wq/wk/wv/wo Linears without bias giving `a` query heads and
   `kv` key/value heads of width d; rotary embeddings as complex numbers (torch.polar for the
   table, computed every step for the run's sequence length; torch.view_as_complex on
   interleaved pairs of Q and K in fp32, a complex multiply, torch.view_as_real back, cast to the
   activations' dtype); grouped-query attention by repeat_interleave of K and V to `a` heads, then
   F.scaled_dot_product_attention(is_causal=True); SwiGLU MLP with separate w1 (gate), w3 (up),
   w2 (down) Linears; final RMSNorm; an untied output Linear. Loss: F.cross_entropy over the
   shifted logits upcast to fp32 (logits.float()).

Both expose a factory following the capture package's `--module pkg.mod:factory` contract
(workloads/capture/README.md, "Your own model"): `factory(layers=N, **symbols)`, with attributes
trainsim_symbols, trainsim_ties, trainsim_layers_attr and trainsim_loss, so that

    PYTHONPATH=workloads/capture python3 -m trainsim_capture \\
        --module reports.validation.captured_models.hand_models:llama_complex \\
        --dims kv=4,g=4,d=128,f=5632,V=32000 --layers 22 --micro-batch 4 --seq 2048 \\
        --precision autocast-bf16 -o out.json

records what measure.py runs (the module path resolves from the repository root, which the
capture puts on sys.path). Runs on PyTorch 1.13 (CPU dry run; the capture's stand-in provides
scaled_dot_product_attention there) and 2.x alike.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# ------------------------------------------------------------------------------------------------
# 1. GPT-2 with unfused ops


class UnfusedSelfAttention(nn.Module):
    def __init__(self, hidden, heads, max_positions):
        super().__init__()
        assert hidden % heads == 0
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out_proj = nn.Linear(hidden, hidden)
        mask = torch.tril(torch.ones(max_positions, max_positions, dtype=torch.bool))
        self.register_buffer("causal_mask", mask.view(1, 1, max_positions, max_positions), persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        q = self.query(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.key(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.value(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(self.causal_mask[:, :, :s, :s] == 0, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        y = torch.matmul(probs, v)
        y = y.transpose(1, 2).contiguous().view(b, s, h)
        return self.out_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.fc_in = nn.Linear(hidden, ffn)
        self.gelu = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(ffn, hidden)

    def forward(self, x):
        return self.fc_out(self.gelu(self.fc_in(x)))


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads, ffn, max_positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = UnfusedSelfAttention(hidden, heads, max_positions)
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = GPT2MLP(hidden, ffn)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2Unfused(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab, max_positions):
        super().__init__()
        self.dims = dict(layers=layers, hidden=hidden, heads=heads, ffn=ffn, vocab=vocab,
                         max_positions=max_positions)
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_positions, hidden)
        self.h = nn.ModuleList([GPT2Block(hidden, heads, ffn, max_positions) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of the residual projections
            if name.endswith(("attn.out_proj.weight", "mlp.fc_out.weight")):
                with torch.no_grad():
                    p.normal_(0.0, 0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(m):
        with torch.no_grad():
            if isinstance(m, nn.Linear):
                m.weight.normal_(0.0, 0.02)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 0.02)

    def forward(self, idx):
        b, s = idx.shape
        pos = torch.arange(0, s, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt2_loss(model, idx, targets=None):
    """Next-token cross-entropy over the shifted logits, in the logits' own dtype. `targets` is
    ignored (the capture contract passes it): the labels are the inputs shifted by one."""
    logits = model(idx)
    return F.cross_entropy(logits[:, :-1, :].reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))


def gpt_unfused(layers, a, d, f, V, P):
    """GPT-2 with unfused attention: hidden = a x d, FFN f, vocabulary V, P positions (the mask
    buffer and the position table)."""
    return GPT2Unfused(layers, a * d, a, f, V, P)


gpt_unfused.trainsim_symbols = ["a", "d", "f", "V", "P"]
gpt_unfused.trainsim_ties = {"h": "a*d", "kv": "a"}
gpt_unfused.trainsim_layers_attr = "h"
gpt_unfused.trainsim_loss = gpt2_loss


def gpt_unfused_params(layers, a, d, f, V, P):
    h = a * d
    per_layer = 2 * 2 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h)
    return layers * per_layer + V * h + P * h + 2 * h


# ------------------------------------------------------------------------------------------------
# 2. Llama with complex rotary embeddings (Meta's reference style)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs_cis(dim, end, device, theta=500000.0):
    """The rotary table as unit complex numbers [end, dim/2] (complex64), from fp32 angles."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def _sdpa_causal(q, k, v):
    """F.scaled_dot_product_attention, looked up at call time (the capture on PyTorch 1.13 installs
    a stand-in); PyTorch 1.13 without it (the CPU dry run): the same maths written out."""
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, is_causal=True)
    s = q.shape[-2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    return torch.matmul(F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1), v)


class Attention(nn.Module):
    def __init__(self, heads, kv_heads, head_dim, hidden):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.n_rep = heads // kv_heads
        self.wq = nn.Linear(hidden, heads * head_dim, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(heads * head_dim, hidden, bias=False)

    def forward(self, x, freqs_cis):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        if self.n_rep > 1:
            xk = torch.repeat_interleave(xk, self.n_rep, dim=2)
            xv = torch.repeat_interleave(xv, self.n_rep, dim=2)
        out = _sdpa_causal(xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2))
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, heads, kv_heads, head_dim, hidden, ffn, eps):
        super().__init__()
        self.attention = Attention(heads, kv_heads, head_dim, hidden)
        self.feed_forward = FeedForward(hidden, ffn)
        self.attention_norm = RMSNorm(hidden, eps)
        self.ffn_norm = RMSNorm(hidden, eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class LlamaComplex(nn.Module):
    def __init__(self, layers, heads, kv_heads, head_dim, ffn, vocab, eps=1e-5):
        super().__init__()
        hidden = heads * head_dim
        self.dims = dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                         ffn=ffn, vocab=vocab)
        self.head_dim = head_dim
        self.tok_embeddings = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([TransformerBlock(heads, kv_heads, head_dim, hidden, ffn, eps)
                                     for _ in range(layers)])
        self.norm = RMSNorm(hidden, eps)
        self.output = nn.Linear(hidden, vocab, bias=False)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    m.weight.normal_(0.0, 0.02)

    def forward(self, tokens):
        _, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs_cis = precompute_freqs_cis(self.head_dim, seqlen, tokens.device)
        for layer in self.layers:
            h = layer(h, freqs_cis)
        return self.output(self.norm(h))


def llama_loss(model, tokens, targets=None):
    """Next-token cross-entropy over the shifted logits in fp32. `targets` is ignored (the capture
    contract passes it): the labels are the inputs shifted by one."""
    logits = model(tokens).float()
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))


def llama_complex(layers, kv, g, d, f, V):
    """Meta-style Llama: kv key/value heads, g query heads per key/value head (a = kv x g),
    head width d (hidden = a x d), SwiGLU width f, vocabulary V."""
    return LlamaComplex(layers, kv * g, kv, d, f, V)


llama_complex.trainsim_symbols = ["kv", "g", "d", "f", "V"]
llama_complex.trainsim_ties = {"a": "kv*g", "h": "a*d"}
llama_complex.trainsim_layers_attr = "layers"
llama_complex.trainsim_loss = llama_loss


def llama_complex_params(layers, kv, g, d, f, V):
    a = kv * g
    h = a * d
    per_layer = 2 * h + h * (a * d) + 2 * h * (kv * d) + (a * d) * h + 3 * h * f
    return layers * per_layer + 2 * V * h + h


FACTORIES = {"gpt_unfused": gpt_unfused, "llama_complex": llama_complex}
LOSSES = {"gpt_unfused": gpt2_loss, "llama_complex": llama_loss}
PARAMS = {"gpt_unfused": gpt_unfused_params, "llama_complex": llama_complex_params}


# ------------------------------------------------------------------------------------------------
# trainsim's own model JSON (schema: workloads/models/*.json) for each


def trainsim_model_json(factory, dims, layers, seq, precision, name):
    """The run's model as a trainsim model document. precision: the run's "bf16-mixed" or "bf16"
    (under autocast the residual stream stays fp32: numerics.fp32_residual)."""
    if factory == "gpt_unfused":
        a, d, f, V, P = dims["a"], dims["d"], dims["f"], dims["V"], dims["P"]
        h = a * d
        description = (f"reports/validation/captured_models/hand_models.py GPT2Unfused: {layers} layers, hidden {h}, "
                       f"{a} heads, FFN {f}, vocabulary {V}, {P} positions, sequence {seq}; pre-LayerNorm, separate "
                       f"q/k/v Linears with bias, attention by hand (matmul, scale, masked_fill of a materialized "
                       f"causal mask, softmax, matmul), GELU (tanh approximation), learned positions, tied LM head, "
                       f"no dropout.")
        arch = {"layers": layers, "hidden": h, "heads": a, "ffn_hidden": f, "vocab": V, "seq_len": P,
                "tied_embeddings": True, "biases": True, "dropout": False, "norm": "layernorm", "mlp": "gelu",
                "position": "learned"}
        attention = "materialized"
        params = gpt_unfused_params(layers, a, d, f, V, P)
    elif factory == "llama_complex":
        kv, g, d, f, V = dims["kv"], dims["g"], dims["d"], dims["f"], dims["V"]
        a = kv * g
        h = a * d
        description = (f"reports/validation/captured_models/hand_models.py LlamaComplex: {layers} layers, hidden {h}, "
                       f"{a} query heads, {kv} key/value heads (repeat_interleave), FFN {f} (SwiGLU, separate "
                       f"w1/w3/w2), vocabulary {V}, sequence {seq}; RMSNorm written out (fp32), rotary embeddings as "
                       f"complex numbers (torch.polar, view_as_complex), scaled_dot_product_attention (causal), "
                       f"untied head, no biases, no dropout.")
        arch = {"layers": layers, "hidden": h, "heads": a, "kv_heads": kv, "ffn_hidden": f, "vocab": V,
                "seq_len": seq, "tied_embeddings": False, "biases": False, "dropout": False, "norm": "rmsnorm",
                "mlp": "swiglu", "position": "rotary"}
        attention = "flash"
        params = llama_complex_params(layers, kv, g, d, f, V)
    else:
        raise ValueError(f"unknown factory {factory!r}")
    numerics = {"precision": precision, "attention": attention}
    if precision == "bf16-mixed":
        numerics["fp32_residual"] = True
    return {
        "schema_version": 1,
        "name": name,
        "description": description,
        "architecture": arch,
        "numerics": numerics,
        "published": {"params": float(params), "significant_digits": 6,
                      "source": "counted from reports/validation/captured_models/hand_models.py (exact parameter "
                                "count of the module; a tied weight once)"},
    }
