#!/usr/bin/env python3
"""Ops, shapes, FLOPs and saved bytes of a tiny hand-written model against numbers worked by hand.

Model (trainsim_capture.examples.tiny_mlp): embedding V x h; layers y = x + fc2(relu(fc1(x))) with
fc1 = Linear(h, f), fc2 = Linear(f, h) (biases); head Linear(h, V); cross-entropy. fp32, h = 8,
f = 32, V = 50, micro-batch b = 2, sequence s = 4, so T = b*s = 8 tokens.

By hand (C[m, n] = A[m, k] B[k, n]):
  forward : fc1: m = T = 8, n = f = 32, k = h = 8, FLOPs 2*8*32*8 = 4096
            fc2: m = 8, n = h = 8, k = f = 32,   FLOPs 4096
  backward: fc2 dgrad dX = dY W2        m = 8,  n = 32, k = 8
            fc2 wgrad dW2 = dY^T X2     m = 8,  n = 32, k = 8   (C = [h, f])
            fc1 dgrad dX = dY W1        m = 8,  n = 8,  k = 32
            fc1 wgrad dW1 = dY^T X1     m = 32, n = 8,  k = 8   (C = [f, h])
            and one column sum per bias (2 reductions)
  saved   : the layer allocates and keeps to its backward relu's output (relu saves its result;
            fc2 saves the same tensor as its input): T*f*4 = 1024 bytes; its output y (T*h*4 = 256
            bytes, allocator block 512) lives on as the next layer's saved input. fc1's output is freed
            in the forward (relu does not need its input).
"""
import _common

_common.require_torch()
from trainsim_capture import examples  # noqa: E402

c = _common.Checks("test_handworked")
doc = _common.capture_module(examples.tiny_mlp, {"h": 8, "f": 32, "V": 50}, 4, 2, 4, precision="fp32",
                             optimizer="adamw-foreach")
L = doc["layers"][0]
fwd, bwd = L["phases"]["forward"]["ops"], L["phases"]["backward"]["ops"]
gf = [o for o in fwd if o["class"] == "gemm"]
c.eq(len(gf), 2, "forward: two GEMMs (one per Linear)")
c.eq([(g["gemm"]["m"], g["gemm"]["n"], g["gemm"]["k"]) for g in gf], [(8, 32, 8), (8, 8, 32)],
     "forward GEMMs (m, n, k)")
c.eq([g["flops"] for g in gf], [4096, 4096], "forward GEMM FLOPs 2mnk")
c.eq([g["gemm"]["role"] for g in gf], ["fc1", "fc2"], "forward GEMM roles from the weights")
c.eq([g["gemm"]["tp"] for g in gf], [{"mode": "column", "split": "n"}, {"mode": "row", "split": "k"}],
     "Megatron split of the forward GEMMs")
c.eq([g["gemm"]["m_expr"] + "," + g["gemm"]["n_expr"] + "," + g["gemm"]["k_expr"] for g in gf],
     ["b*s,f,h", "b*s,h,f"], "forward GEMM dimensions as expressions")
gb = [o for o in bwd if o["class"] == "gemm"]
c.eq(len(gb), 4, "backward: two GEMMs per Linear")
got = sorted((g["gemm"]["role"], g["gemm"]["pass"], g["gemm"]["m"], g["gemm"]["n"], g["gemm"]["k"]) for g in gb)
want = sorted([("fc2", "dgrad", 8, 32, 8), ("fc2", "wgrad", 8, 32, 8), ("fc1", "dgrad", 8, 8, 32),
               ("fc1", "wgrad", 32, 8, 8)])
c.eq(got, want, "backward GEMMs (role, pass, m, n, k)")
c.eq(sum(1 for o in bwd if o["class"] == "reduction"), 2, "backward: one column sum per bias")
c.eq(sum(g["flops"] for g in gb), 4 * 4096, "backward GEMM FLOPs")
views = [o for o in fwd + bwd if o["class"] == "view"]
c.check(views and all(o["kernels"] == 0 and o["bytes_read"] == 0 and o["bytes_written"] == 0 for o in views),
        "views launch no kernel and move no bytes")
relu = [o for o in fwd if o["op"].startswith("aten::relu")]
c.eq(len(relu), 1, "one relu")
c.eq((relu[0]["bytes_read"], relu[0]["bytes_written"], relu[0]["flops"]), (1024, 1024, 256),
     "relu reads and writes T*f*4 bytes, T*f FLOPs")

bufs = doc["buffers"]
made = [b for b in bufs if b["owner"] == "layer" and b["alloc"] and b["alloc"]["phase"] == "layer.forward"]
kept = [b for b in made if b["free"] and b["free"]["phase"] != "layer.forward"]
freed_in_fwd = [b for b in made if b["free"] and b["free"]["phase"] == "layer.forward"]
c.eq(sorted(b["bytes"] for b in kept), [256, 1024], "bytes the layer's forward allocates and keeps (relu out, y)")
c.eq(sorted(b["alloc_bytes"] for b in kept), [512, 1024], "allocator-rounded (512-byte blocks)")
c.eq(sorted(b["bytes"] for b in freed_in_fwd), [256, 1024], "freed within the forward: fc1's and fc2's outputs")
relu_out = relu[0]["out"][0]["buf"]
rb = bufs[relu_out]
c.check(len(rb.get("saved", [])) == 2, "relu's output is saved twice (relu's result, fc2's input)", rb.get("saved"))
c.eq(rb["free"]["phase"], "layer.backward", "relu's output is freed in the layer's backward")
y = [b for b in kept if b["bytes"] == 256][0]
c.eq((y["free"]["phase"], y["free"].get("layer_offset")), ("layer.backward", 1),
     "the layer's output is freed in the next layer's backward")
c.check("free_last" in y and y["free_last"]["phase"] == "head.backward",
        "the last layer's output is freed in the head's backward (free_last)")
p = {x["name"]: x for x in doc["params"]}
c.eq(p["layers.1.fc1.weight"]["shape_expr"], ["f", "h"], "parameter shapes as expressions")
c.eq(p["layers.1.fc1.weight"]["tp"], "column", "fc1 is column-parallel")
c.eq(p["layers.1.fc2.weight"]["tp"], "row", "fc2 is row-parallel")
c.done()
