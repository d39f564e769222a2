#!/usr/bin/env python3
"""What one transformer layer keeps for its backward, measured: the bytes torch.cuda.memory_allocated
gains over one layer's forward with autograd recording, for reports/validation/scripts/model.py's GPT
block and model_llama.py's Llama block (RMSNorm, grouped-query attention, rotary embeddings, SwiGLU).

Two ways each layer runs in the measured stacks (and each under activation checkpointing for two of
the cases, run_step_stacks.Checkpointed: the layer then keeps its input alone):
  autocast  fp32 parameters and an fp32 residual stream, the forward under torch.autocast(bfloat16)
            (single GPU, DDP, pipeline stages);
  bf16      bf16 parameters and a bf16 residual stream, no autocast (FSDP2 with param_dtype=bfloat16).

Per layer: saved = (allocated after the forward) - (allocated before it) - (the output's bytes)
+ (the input's bytes), the layer's input counted as its own (it is what its first norm saves),
its output not (the next layer's input). Read by tests/workloads/saved_bytes_test.cpp against
workloads/stacks/stack_layer.cpp's torch_layer_saved_bytes.

    python3 calibrate/scripts/saved_bytes_probe.py --out saved_bytes.json
"""
import argparse
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reports", "validation", "scripts"))
sys.path.insert(0, HERE)
from model import Block, init_weights  # noqa: E402
from model_llama import LlamaBlock  # noqa: E402
from run_step_stacks import Checkpointed  # noqa: E402
from torch_probe_doc import write_probe_doc  # noqa: E402

CASES = [  # name, arch, hidden, heads, kv_heads, ffn_hidden, micro_batch
    ("gpt_h1024", "gpt", 1024, 16, 16, 4096, 2),
    ("gpt_h4096", "gpt", 4096, 32, 32, 16384, 1),
    ("llama_h4096_kv8", "llama", 4096, 32, 8, 14336, 1),
    ("llama_h4096_kv8_mb2", "llama", 4096, 32, 8, 14336, 2),
    ("llama_h2048_kv16", "llama", 2048, 16, 16, 5632, 2),
]
SEQ = 2048


def one_layer(arch, h, a, kv, f, mode, mb, dev, checkpointed=False):
    torch.manual_seed(0)
    with torch.device(dev):
        blk = Block(h, a, f) if arch == "gpt" else LlamaBlock(h, a, kv, f, SEQ)
    init_weights(blk, 1)
    if checkpointed:
        blk = Checkpointed(blk)
    dtype = torch.float32
    if mode == "bf16":
        blk.to(torch.bfloat16)
        dtype = torch.bfloat16
    x = torch.randn(mb, SEQ, h, device=dev, dtype=dtype, requires_grad=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(dev)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        if mode == "autocast":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = blk(x)
        else:
            y = blk(x)
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated(dev)
    io = x.numel() * x.element_size()
    out = {"arch": arch, "mode": mode, "checkpointed": checkpointed, "hidden": h, "heads": a, "kv_heads": kv, "ffn_hidden": f, "micro_batch": mb,
           "seq": SEQ, "allocated_before": before, "allocated_after": after, "input_bytes": io,
           "output_bytes": y.numel() * y.element_size(),
           "saved_bytes_per_layer": after - before - y.numel() * y.element_size() + io}
    # The backward must run (the saved tensors are the ones it uses), and frees them; under the same
    # attention backend, which a checkpointed layer's recompute must choose again.
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        y.float().sum().backward()
    del y, x, blk
    torch.cuda.empty_cache()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    dev = torch.device("cuda", 0)
    # The process's first GEMMs allocate cuBLAS's workspaces through the caching allocator (33 MiB
    # on an H200 with torch 2.11 in the first case): one unrecorded layer first, so that no case counts them.
    for mode in ("autocast", "bf16"):
        one_layer(*CASES[0][1:6], mode, CASES[0][6], dev)
    rows = []
    for name, arch, h, a, kv, f, mb in CASES:
        for mode in ("autocast", "bf16"):
            r = one_layer(arch, h, a, kv, f, mode, mb, dev)
            r["name"] = f"{name}_{mode}"
            rows.append(r)
            print(f"{r['name']}: {r['saved_bytes_per_layer'] / 2**20:.1f} MiB saved per layer", flush=True)
    # Under activation checkpointing (run_step_stacks.Checkpointed) a layer keeps its input alone.
    for name, arch, h, a, kv, f, mb in (CASES[0], CASES[2]):
        for mode in ("autocast", "bf16"):
            r = one_layer(arch, h, a, kv, f, mode, mb, dev, checkpointed=True)
            r["name"] = f"{name}_{mode}_checkpointed"
            rows.append(r)
            print(f"{r['name']}: {r['saved_bytes_per_layer'] / 2**20:.1f} MiB saved per layer", flush=True)
    write_probe_doc(args.out, "trainsim.saved_bytes_probe", "calibrate/scripts/saved_bytes_probe.py",
                    {"method": "torch.cuda.memory_allocated around one layer's forward (flash attention, autograd "
                               "recording): after - before - output + input bytes; after one unrecorded layer of the "
                               "first case in each mode (cuBLAS's workspaces allocated)", "layers": rows})


if __name__ == "__main__":
    main()
