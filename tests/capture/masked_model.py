"""A model that slices a [P, P] causal mask buffer to [s, s], as GPT-2 style code written before
scaled_dot_product_attention does: at s = P the slice spans the whole buffer and PyTorch runs no op
for it, so its op sequence depends on whether s equals P (test_scaling.py)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedBlock(nn.Module):
    def __init__(self, h, P):
        super().__init__()
        self.proj = nn.Linear(h, h)
        self.register_buffer("mask", torch.tril(torch.ones(P, P, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        s = x.shape[1]
        y = self.proj(x)
        scores = torch.matmul(y, y.transpose(-2, -1)).masked_fill(~self.mask[:s, :s], float("-inf"))
        return torch.matmul(F.softmax(scores, dim=-1), y)


class MaskedModel(nn.Module):
    def __init__(self, layers, h, V, P):
        super().__init__()
        self.emb = nn.Embedding(V, h)
        self.blocks = nn.ModuleList(MaskedBlock(h, P) for _ in range(layers))
        self.head = nn.Linear(h, V, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def masked_model(layers, h, V, P):
    return MaskedModel(layers, h, V, P)
