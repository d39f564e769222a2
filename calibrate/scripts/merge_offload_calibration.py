#!/usr/bin/env python3
"""Adds calibration.torch_offload to a profile from calibrate/scripts/torch_offload_bench.py's files.

    python3 calibrate/scripts/merge_offload_calibration.py --profile hwprofiles/h200x4-measured.json \
        --bench reports/calibration/offload/h200x4/torch_offload_bench_r{1,2,4}.json --out hwprofiles/h200x4-measured.json

One curve per (what, ranks at once), bytes -> GB/s, the medians of the raw files rounded to 4
significant digits: d2h_pageable (blocking `x.to("cpu")` into a fresh pageable tensor),
d2h_pinned (`non_blocking=True`, fresh pinned), h2d_pinned (the all-gather's copy-in),
cpu_grad_add (`acc += y` on the CPU, GB/s of y). AdamW: per process, the run over 16 tensors of
4 M parameters (FSDP2 shards of transformer weights are tensors of millions of parameters; the
runs over many small tensors are in the raw files). d2h_pageable and cpu_grad_add come from the
part of a file closest to how the step makes them: `autograd_rounds` (synchronized rounds of the
accumulating micro-batch's copy and add inside a backward pass, on autograd's thread, where FSDP2
runs them), else `rounds` (the same rounds on the main thread), else the back-to-back `copies`
(files without the round parts merge as before, byte for byte).
"""
import argparse
import json
import re


# The curves the accumulating micro-batch's rounds measure where a bench file has them.
STEP_PATTERN = ("d2h_pageable", "cpu_grad_add")


def sig4(x):
    return float(f"{x:.4g}")


def close_of(text, start):
    """Index of the brace that closes the object opening at text[start] (strings skipped)."""
    depth, i, in_str = 0, start, False
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SystemExit("unbalanced JSON")


def insert_section(text, section, name="torch_offload"):
    """The profile's text with calibration.<name> added or replaced, the rest byte for byte
    (the committed profiles mix compact and indented forms)."""
    cal = text.index('"calibration": {') + len('"calibration": ')
    end = close_of(text, cal)
    body = re.sub(r'\{\s+"bytes": ([^,]+),\s+"GBps": ([^\s]+)\s+\}', r'{"bytes": \1, "GBps": \2}',
                  json.dumps(section, indent=2)).replace("\n", "\n    ")
    key = text.find(f'"{name}": {{', cal, end)
    if key >= 0:
        start = key + len(f'"{name}": ')
        return text[:start] + body + text[close_of(text, start) + 1:]
    head = text[:end].rstrip()
    return head + f',\n    "{name}": ' + body + "\n  " + text[end:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--bench", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    text = open(a.profile).read()
    prof = json.loads(text)
    curves, adamw, prov = [], [], None
    names = [("d2h_pageable", "d2h_pageable_GBps"), ("d2h_pinned", "d2h_pinned_GBps"),
             ("h2d_pinned", "h2d_pinned_GBps"), ("cpu_grad_add", "cpu_add_GBps")]
    docs = sorted((json.load(open(p)) for p in a.bench), key=lambda d: d["ranks"])
    for what, key in names:
        for d in docs:
            rows = d["copies"]
            if what in STEP_PATTERN:
                rows = d.get("autograd_rounds", d.get("rounds", rows))
            pts = [{"bytes": float(r["bytes"]), "GBps": sig4(r[key])} for r in sorted(rows, key=lambda r: r["bytes"])]
            curves.append({"what": what, "gpus": d["ranks"], "points": pts})
    for d in docs:
        big = [r for r in d["adam"] if r["tensors"] == 16 and r["elements_per_tensor"] == 1 << 22][0]
        adamw.append({"processes": d["ranks"], "threads_per_process": d["threads_per_rank"],
                      "params_per_s_per_process": sig4(big["params_per_s"])})
        prov = d["provenance"]
    section = {
        "curves": curves, "adamw": adamw,
        "source": (f"measured by calibrate/scripts/torch_offload_bench.py on {prov['host']} {prov['date'][:10]} "
                   f"({prov['gpu']}, {prov['cpu_count']} logical CPUs, torch {prov['torch']}): 1, 2 and 4 ranks at once "
                   "(GPUs 0; 0,1; 0-3), cores / ranks threads each, median of 5 samples of the slowest rank"
                   + ("; d2h_pageable and cpu_grad_add from synchronized rounds of copy and add inside a backward "
                      "pass, on autograd's thread, as FSDP2 makes them" if any("autograd_rounds" in d for d in docs) else
                      "; d2h_pageable and cpu_grad_add from synchronized rounds of copy and add as the step makes "
                      "them" if any("rounds" in d for d in docs) else "") + "; merged by "
                   "calibrate/scripts/merge_offload_calibration.py; raw: reports/calibration/offload/")}
    out = insert_section(text, section)
    merged = json.loads(out)
    prof["calibration"]["torch_offload"] = section
    if merged != prof:
        raise SystemExit("merge_offload_calibration: the inserted text does not parse back to the merged profile")
    with open(a.out, "w") as f:
        f.write(out)


if __name__ == "__main__":
    main()
