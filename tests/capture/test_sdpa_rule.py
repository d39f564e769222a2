#!/usr/bin/env python3
"""The capture's SDPA backend rule against the constraints of PyTorch's
aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, case by case, with the choices PyTorch 2.11
made on an H100 for the measured runs of reports/validation/captured_models/runs (their
stack.details.sdpa_calls): Falcon's multi-query call (32 query heads, one key/value head, no
enable_gqa, a boolean mask) ran SDPA's math path; grouped-query calls with enable_gqa and no mask
ran a fused kernel. The rule is checked as on PyTorch 2.x (fused kernels present) whatever the
installed version."""
import _common

_common.require_torch()
import torch  # noqa: E402
from trainsim_capture import compat  # noqa: E402

c = _common.Checks("test_sdpa_rule")
compat.TORCH2 = True
compat.has_aten = lambda name: True


def t(shape, dtype=torch.bfloat16):
    return torch.empty(shape, dtype=dtype, device="meta")


q, kv1, kv8, kv32 = t([3, 32, 2048, 64]), t([3, 1, 2048, 64]), t([3, 8, 2048, 64]), t([3, 32, 2048, 64])
mask = t([3, 1, 2048, 2048], torch.bool)
c.eq(compat.sdpa_backend(q, kv1, kv1, mask, 0.0), "math", "Falcon multi-query: one broadcast key/value head, a mask")
c.eq(compat.sdpa_backend(q, kv1, kv1, None, 0.0), "math", "one broadcast key/value head without enable_gqa")
c.eq(compat.sdpa_backend(q, kv8, kv8, None, 0.0, enable_gqa=True), "flash", "grouped-query with enable_gqa, no mask")
c.eq(compat.sdpa_backend(q, kv8, kv8, mask, 0.0, enable_gqa=True), "math",
     "grouped-query with a mask: flash takes no mask, memory-efficient no grouped heads")
c.eq(compat.sdpa_backend(q, kv32, kv32, mask, 0.0), "efficient", "equal heads with a mask")
c.eq(compat.sdpa_backend(q, kv32, kv32, None, 0.0), "flash", "equal heads, bf16, no mask")
c.eq(compat.sdpa_backend(t([3, 32, 2048, 64], torch.float32), kv32, kv32, None, 0.0), "math",
     "q in fp32, k and v in bf16 outside autocast: no fused kernel")
c.eq(compat.sdpa_backend(*(t([3, 32, 2048, 64], torch.float32) for _ in range(3)), None, 0.0), "efficient",
     "all fp32: memory-efficient")
c.eq(compat.sdpa_backend(t([3, 32, 2048, 320]), t([3, 32, 2048, 320]), t([3, 32, 2048, 320]), None, 0.0),
     "efficient", "head_dim 320: past flash's 256")
c.done()
