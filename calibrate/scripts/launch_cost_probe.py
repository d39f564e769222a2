#!/usr/bin/env python3
"""Does an eager operator's launch cost the host more while the GPU is busy? (Its
results left the tree: reports/HISTORY.md.)

The host dispatch calibration (torch_stack_dispatch.py) runs a tiny GPT whose kernels finish before
the next launch, so the GPU is idle at every launch; the real rows launch the same operators while
the GPU runs earlier, longer kernels. This probe times the host side of single operators both ways:

- idle: after a synchronize, N launches back to back; each kernel finishes within a few
  microseconds, before the host's next launch;
- busy: after one long kernel (torch.cuda._sleep) is queued, the same N launches (N below the
  stream's 1021-launch queue, measured on a 4 x H200 host), every one while the GPU
  is busy.

Operators: `x.add_(1)` on one element; a [64, 64] x [64, 64] matmul (cuBLAS); a LayerNorm of
[64, 64]; and a 20-operator sequence of these. Per operator and mode, the median host time of a
launch over each sample; samples alternate idle and busy.

    python3 calibrate/scripts/launch_cost_probe.py --out FILE
"""
import argparse
import statistics
import time

import torch

from torch_probe_doc import write_probe_doc

LAUNCHES = 600
SLEEP_CYCLES = 200_000_000  # ~0.1 s at ~1.98 GHz: longer than the launches below (at most ~10 ms)


def ops():
    x = torch.zeros(1, device="cuda")
    a = torch.randn(64, 64, device="cuda")
    b = torch.randn(64, 64, device="cuda")
    ln = torch.nn.LayerNorm(64, device="cuda")

    def mix():
        for _ in range(5):
            x.add_(1)
            torch.matmul(a, b)
            ln(a)
            torch.nn.functional.gelu(a)
    return {"add_": lambda: x.add_(1), "matmul": lambda: torch.matmul(a, b), "layer_norm": lambda: ln(a), "mix_of_20": mix}


def timed(fn, busy, launches):
    torch.cuda.synchronize()
    if busy:
        torch.cuda._sleep(SLEEP_CYCLES)
    times = []
    for _ in range(launches):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=5)
    args = ap.parse_args()
    table = {}
    for name, fn in ops().items():
        launches = LAUNCHES // 20 if name == "mix_of_20" else LAUNCHES  # the mix queues 20 kernels a call
        timed(fn, False, launches)  # warm-up: kernels loaded, the allocator primed
        idle, busy = [], []
        for _ in range(args.samples):
            idle.append(timed(fn, False, launches))
            busy.append(timed(fn, True, launches))
        table[name] = {"idle_us": idle, "busy_us": busy, "launches": launches,
                       "busy_over_idle": statistics.median(busy) / statistics.median(idle)}
    write_probe_doc(args.out, "trainsim.launch_cost_probe", "calibrate/scripts/launch_cost_probe.py", {"operators": table})
    for name, t in table.items():
        print(f"[launch_cost_probe] {name}: idle {statistics.median(t['idle_us']):.2f} us, busy "
              f"{statistics.median(t['busy_us']):.2f} us, ratio {t['busy_over_idle']:.3f}", flush=True)


if __name__ == "__main__":
    main()
