#!/usr/bin/env python3
"""The GPU's time between queued kernels, and whether block timing by CUDA events holds it.

The calibration's kernel curves are timed by CUDA events around blocks of back-to-back launches
(calibrate/scripts/torch_microbench.py, torch_layer_kernels.py), the GEMM and flash attention tables by
the profiler's kernel durations inside steps (torch_step_gemms.py). A kernel queued behind another
starts some time after the other ends (the front end's gap; the validation rows' traces show a median of
1.5-2.9 us, calibrate/scripts/step_interference.py). This probe runs, per kernel and size, N launches
back to back twice: once timed by two CUDA events around the block (block / N), once under
torch.profiler (each kernel's duration and the gaps between them). block / N - mean duration is what a
block-timed curve holds beyond the kernels' own time.

  python3 calibrate/scripts/kernel_gap_probe.py --out gap.json

A probe (results: reports/calibration/step-interference/); nothing in trainsim reads its output.
"""
import argparse
import json
import statistics

import torch

N = 200


def cases(dev):
    for elems in (1 << 12, 1 << 16, 1 << 20, 1 << 24):
        x = torch.randn(elems, device=dev)
        y = torch.randn(elems, device=dev)
        yield f"add_fp32_{elems}", (lambda x=x, y=y: x.add_(y)), 12.0 * elems
        xb = x.to(torch.bfloat16)
        yield f"cast_fp32_to_bf16_{elems}", (lambda x=x, xb=xb: xb.copy_(x)), 6.0 * elems
    for m, n, k in ((2048, 4096, 4096), (2048, 16384, 4096)):
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        yield f"linear_bf16_{m}x{n}x{k}", (lambda a=a, w=w: torch.nn.functional.linear(a, w)), 2.0 * m * n * k


def block_us(fn):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(5):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(N):
            fn()
        z.record()
        z.synchronize()
        out.append(a.elapsed_time(z) * 1e3 / N)
    return statistics.median(out)


def profiled(fn):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(N):
            fn()
        torch.cuda.synchronize()
    ks = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                key=lambda e: e.time_range.start)
    durs = [e.time_range.end - e.time_range.start for e in ks]
    gaps = [ks[i + 1].time_range.start - ks[i].time_range.end for i in range(len(ks) - 1)]
    return durs, gaps


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    dev = torch.device("cuda", 0)
    rows = []
    for name, fn, work in cases(dev):
        blk = block_us(fn)
        durs, gaps = profiled(fn)
        rows.append({"case": name, "work": work, "launches": N, "block_us_per_kernel": round(blk, 4),
                     "kernels_profiled": len(durs), "duration_us_mean": round(statistics.mean(durs), 4),
                     "duration_us_median": round(statistics.median(durs), 4),
                     "gap_us_median": round(statistics.median(gaps), 4) if gaps else None,
                     "gap_us_mean": round(statistics.mean(gaps), 4) if gaps else None,
                     "block_minus_duration_us": round(blk - statistics.mean(durs), 4)})
        print(json.dumps(rows[-1]))
    with open(a.out, "w") as f:
        json.dump({"schema_version": 1, "kind": "trainsim.kernel_gap_probe", "gpu": torch.cuda.get_device_name(0),
                   "uuid": str(torch.cuda.get_device_properties(0).uuid), "torch": torch.__version__, "rows": rows},
                  f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
