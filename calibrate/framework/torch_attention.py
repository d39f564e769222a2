"""Flash attention as PyTorch runs it: scaled_dot_product_attention, forward and backward.

sections.attention_table turns the records into calibration.attention.
"""
import statistics

import torch
import torch.nn.functional as F

from .timing import BF16, cuda_time, stats

# ---------------------------------------------------------------------------------------------
# attention: flash attention through scaled_dot_product_attention, forward and backward


# (batch, heads, sequence, head dim): the shapes of the measured rows' layers first, so a run of
# fewer sizes keeps those.
ATTENTION_SHAPES = [(4, 16, 2048, 64), (2, 16, 2048, 64), (1, 16, 2048, 128), (1, 20, 2048, 128), (1, 32, 2048, 128),
                    (1, 40, 2048, 128), (1, 48, 2048, 128), (1, 32, 4096, 128), (1, 32, 8192, 128), (8, 16, 1024, 64)]


def attention(dev, sizes=len(ATTENTION_SHAPES), progress=lambda done, total: None):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    res = []
    for i, (b, a, s, d) in enumerate(ATTENTION_SHAPES[:sizes]):
        progress(i, sizes)
        q, k, v = (torch.randn(b, a, s, d, device=dev, dtype=BF16, requires_grad=True) for _ in range(3))
        go = torch.randn(b, a, s, d, device=dev, dtype=BF16)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            fwd = cuda_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
            both = cuda_time(lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                                         (q, k, v), go))
        fm, bm = statistics.median(fwd), statistics.median(both)
        # FLOPs as FlashAttention-2 counts them: forward 4 b a s^2 d, halved when causal; backward 2.5x.
        flops_f = 4.0 * b * a * s * s * d / 2
        res.append({"batch": b, "heads": a, "seq": s, "head_dim": d, "causal": True,
                    "forward_s": stats(fwd), "forward_backward_s": stats(both),
                    "forward_TFLOPs": flops_f / fm / 1e12, "backward_TFLOPs": 2.5 * flops_f / max(bm - fm, 1e-9) / 1e12,
                    "flops_counted": "forward 2 b a s^2 d (causal half of 4 b a s^2 d), backward 2.5 x forward"})
        del q, k, v, go
    return res

