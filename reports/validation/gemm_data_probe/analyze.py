#!/usr/bin/env python3
"""Validation call 39: are PyTorch's forward GEMMs faster than trainsim-calibrate's table because of
the operands' values or because of the library path? (reports/validation/README.md, row 39, has the
rule, written before the call ran.)

Reads, beside this file: cal/raw_results.json (trainsim-calibrate --quick --only gemm --gpus 1: the
bf16 table's products, the fastest of up to 8 cuBLASLt candidates, operands uniform in [-1, 1)) and
gemm_data_probe.json (calibrate/scripts/gemm_data_probe.py on the same GPU: F.linear with
training-like and with uniform operands, torch.mm with uniform ones).

    python3 reports/validation/gemm_data_probe/analyze.py
"""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def bench_table():
    """{(m, n, k): the bench's median TFLOP/s}, bf16, the forward pass's entry where there is one."""
    doc = json.load(open(os.path.join(HERE, "cal", "raw_results.json")))
    ms = doc["measurements"] if "measurements" in doc else doc["results"]["measurements"]
    out = {}
    for m in ms:
        if m.get("bench") != "gemm" or m.get("what") != "bf16":
            continue
        p = m["params"]
        key = (int(p["m"]), int(p["n"]), int(p["k"]))
        if key not in out or p.get("pass") == "fwd":
            out[key] = m["stats"]["median"]
    return out


def main():
    bench = bench_table()
    probe = json.load(open(os.path.join(HERE, "gemm_data_probe.json")))
    print("| m x n x k | bench (TFLOP/s) | F.linear, training-like | F.linear, uniform | mm, uniform | train / uniform | uniform linear / bench |")
    print("|---|---|---|---|---|---|---|")
    data, path = [], []
    for r in probe["rows"]:
        key = (r["m"], r["n"], r["k"])
        b = bench.get(key)
        tr, un, mm = r["linear_train_TFLOPs"], r["linear_uniform_TFLOPs"], r["mm_uniform_TFLOPs"]
        data.append(tr / un)
        if b:
            path.append(un / b)
        bench_cell = f"{b:.0f}" if b else "-"
        ratio_cell = f"{un / b:.3f}" if b else "(not in the table)"
        print(f"| {key[0]} x {key[1]} x {key[2]} | {bench_cell} | {tr:.0f} | {un:.0f} | {mm:.0f} | {tr / un:.3f} | {ratio_cell} |")
    d = statistics.median(data)
    p = statistics.median(path) if path else None
    by_data, by_path = d >= 1.05, p is not None and p >= 1.05
    verdict = ("operands' values and library path" if by_data and by_path else "operands' values" if by_data else
               "library path" if by_path else "neither (undecided)")
    print(f"\nRule (row 39): median training-like / uniform {d:.3f}; median uniform F.linear / bench "
          + (f"{p:.3f}" if p is not None else "(no shape in both)") + f": {verdict}")


def call40():
    """Validation call 40: the same products with a memory-bound kernel between them against back to
    back, each product timed by its own events (gemm_data_probe_call40.json), and the SM clock sampled
    every 100 ms meanwhile (clocks_call40.csv)."""
    f = os.path.join(HERE, "gemm_data_probe_call40.json")
    if not os.path.exists(f):
        return
    probe = json.load(open(f))
    print("\n| m x n x k | back to back, each timed (TFLOP/s) | a memory-bound kernel between (TFLOP/s) | between / back to back |")
    print("|---|---|---|---|")
    ratios = []
    for r in probe["rows"]:
        each, between = r["linear_each_TFLOPs"], r["linear_between_TFLOPs"]
        ratios.append(between / each)
        print(f"| {r['m']} x {r['n']} x {r['k']} | {each:.0f} | {between:.0f} | {between / each:.3f} |")
    d = statistics.median(ratios)
    verdict = "duty cycle" if d >= 1.05 else "not the duty cycle" if d <= 1.02 else "undecided"
    print(f"\nRule (row 40): median between / back to back {d:.3f}: {verdict}")
    clocks = os.path.join(HERE, "clocks_call40.csv")
    if os.path.exists(clocks):
        mhz = []
        for line in open(clocks):
            part = line.split(",")[0].strip().split(" ")[0]
            if part.isdigit():
                mhz.append(int(part))
        if mhz:
            print(f"SM clock over the probe, every 100 ms: {len(mhz)} samples, min {min(mhz)}, median "
                  f"{statistics.median(mhz):.0f}, max {max(mhz)} MHz")


if __name__ == "__main__":
    main()
    call40()
