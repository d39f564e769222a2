#!/usr/bin/env python3
"""Why do PyTorch's forward GEMMs in the measured runs outrun trainsim-calibrate's GEMM table?
(its results left the tree: reports/HISTORY.md)

The replay costs a layer's GEMMs from the profile's bf16 table (calibrate/cuda/gemm_bench.cpp: the
fastest of up to 8 cuBLASLt candidates, operands uniform in [-1, 1)). In the profiled steps the
same shapes ran 5-20% faster (a 2048 x 12288 x 4096 forward product: 748-803 TFLOP/s against the
table's 728). Two candidates: the operands' values (a GEMM's power, and with it the clock, depends on
the bits it multiplies), or the library path (PyTorch's cuBLAS call with its bias epilogue against
the bench's plain cuBLASLt product).

This times, on one GPU, bf16 products of the validation GPTs' forward shapes through PyTorch:
- `linear_train`: F.linear(x, W, b) with x ~ N(0, 1) (a LayerNorm's output) and W ~ N(0, 0.02),
  b = 0, as model.py initialises and feeds its Linear layers;
- `linear_uniform`: the same call with x, W uniform in [-1, 1), the bench's operands;
- `mm_uniform`: torch.mm(x, W.t()) without bias on the uniform operands.
Each: 20 warm-up calls, then 5 rounds (the kinds interleaved) of 50 calls timed by CUDA events;
the median round's TFLOP/s.

With --interleaved: also `linear_between`, the training-like F.linear with a
memory-bound kernel after each call (an in-place add over a buffer sized to take about as long as
the product), only the products timed (a pair of CUDA events around each); and `linear_each`, the
same products back to back but each timed by its own events, so that the two differ only in what
runs between the products. A training step's GEMMs alternate with memory-bound kernels; back-to-back
products hold the GPU at its power limit the whole time.

    python3 calibrate/scripts/gemm_data_probe.py --out FILE
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

from torch_probe_doc import write_probe_doc

# (m tokens, n out, k in): the forward products of the h4096 and h5120 layers at 2048 tokens.
SHAPES = [(2048, 12288, 4096), (2048, 4096, 4096), (2048, 16384, 4096), (2048, 4096, 16384),
          (2048, 15360, 5120), (2048, 20480, 5120), (2048, 5120, 20480)]
KINDS = ["linear_train", "linear_uniform", "mm_uniform"]


def operands(kind, m, n, k):
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    if kind == "linear_train":
        x = torch.randn(m, k, device="cuda", generator=g).bfloat16()
        w = (0.02 * torch.randn(n, k, device="cuda", generator=g)).bfloat16()
    else:
        x = (2 * torch.rand(m, k, device="cuda", generator=g) - 1).bfloat16()
        w = (2 * torch.rand(n, k, device="cuda", generator=g) - 1).bfloat16()
    b = torch.zeros(n, device="cuda", dtype=torch.bfloat16)
    return x, w, b


def call(kind, x, w, b):
    if kind == "mm_uniform":
        return torch.mm(x, w.t())
    return F.linear(x, w, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--interleaved", action="store_true", help="also linear_between and linear_each")
    args = ap.parse_args()
    rows = []
    for m, n, k in SHAPES:
        ops = {kind: operands(kind, m, n, k) for kind in KINDS}
        for kind in KINDS:
            for _ in range(20):
                call(kind, *ops[kind])
        samples = {kind: [] for kind in KINDS}
        for _ in range(args.rounds):
            for kind in KINDS:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                start.record()
                for _ in range(args.calls):
                    call(kind, *ops[kind])
                end.record()
                torch.cuda.synchronize()
                seconds = start.elapsed_time(end) / 1e3 / args.calls
                samples[kind].append(2.0 * m * n * k / seconds / 1e12)
        if args.interleaved:
            x, w, b = ops["linear_train"]
            # An fp32 in-place add moves 8 bytes an element; at about 4 TB/s it lasts about as long as
            # the product at about 700 TFLOP/s.
            product_s = 2.0 * m * n * k / 700e12
            gap = torch.zeros(int(product_s * 4e12 / 8), device="cuda")
            samples["linear_between"], samples["linear_each"] = [], []
            for _ in range(args.rounds):
                for between, kind in ((True, "linear_between"), (False, "linear_each")):
                    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(args.calls)]
                    torch.cuda.synchronize()
                    for start, end in events:
                        start.record()
                        F.linear(x, w, b)
                        end.record()
                        if between:
                            gap.add_(1.0)
                    torch.cuda.synchronize()
                    seconds = statistics.median(st.elapsed_time(en) for st, en in events) / 1e3
                    samples[kind].append(2.0 * m * n * k / seconds / 1e12)
        row = {"m": m, "n": n, "k": k}
        for kind in samples:
            row[kind + "_TFLOPs"] = statistics.median(samples[kind])
            row[kind + "_rounds"] = samples[kind]
        rows.append(row)
        print(f"[gemm_data_probe] {m} x {n} x {k}: " + ", ".join(f"{kind} {row[kind + '_TFLOPs']:.0f}" for kind in samples)
              + " TFLOP/s", flush=True)
    write_probe_doc(args.out, "trainsim.gemm_data_probe", "calibrate/scripts/gemm_data_probe.py", {"rows": rows})


if __name__ == "__main__":
    main()
