#!/usr/bin/env python3
"""Adds calibration.torch_offload to a profile from calibrate/scripts/torch_offload_bench.py's files
(maintainers' tool: trainsim-calibrate's profile writer makes this section from its torch_offload part
with the same code, calibrate/framework/sections_offload.py; this script splices the runs of several
rank counts, one process a GPU, into a committed profile).

    python3 calibrate/scripts/merge_offload_calibration.py --profile hwprofiles/h200x4-measured.json \
        --bench reports/calibration/offload/h200x4/torch_offload_bench_r{1,2,4}.json --out hwprofiles/h200x4-measured.json

One curve per (what, ranks at once), bytes -> GB/s, the medians of the raw files rounded to 4
significant digits: d2h_pageable (blocking `x.to("cpu")` into a fresh pageable tensor),
d2h_pinned (`non_blocking=True`, fresh pinned), h2d_pinned (the all-gather's copy-in),
cpu_grad_add (`acc += y` on the CPU, GB/s of y). AdamW: per process, the rate of the run over 16
tensors of 4 M parameters, and the seconds per tensor by tensor size from every run (`adam`'s
sets of equal tensors: per size, the runs' median times summed over their tensors summed), since
the fused CPU AdamW steps its list one tensor at a time, each a parallel region of the process's
threads: a shard of many small tensors costs more than its parameters at the big-tensor rate. d2h_pageable and cpu_grad_add come from the
part of a file closest to how the step makes them: `autograd_rounds` (synchronized rounds of the
accumulating micro-batch's copy and add inside a backward pass, on autograd's thread, where FSDP2
runs them), else `rounds` (the same rounds on the main thread), else the back-to-back `copies`
(files without the round parts merge as before, byte for byte).
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.sections_offload import torch_offload  # noqa: E402


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


def source_of(paths):
    """Where each rank count's figures come from: per folder of raw files, its rank counts, GPUs,
    host, date, machine and which part gave d2h_pageable and cpu_grad_add."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folders = {}
    for path, d in sorted(zip(paths, (json.load(open(p)) for p in paths)), key=lambda pd: pd[1]["ranks"]):
        folder = os.path.relpath(os.path.dirname(os.path.abspath(path)), root) + "/"
        folders.setdefault(folder, []).append(d)
    parts = []
    for folder, ds in folders.items():
        p = ds[-1]["provenance"]
        counts = [str(d["ranks"]) for d in ds]
        ranks = counts[0] if len(counts) == 1 else ", ".join(counts[:-1]) + " and " + counts[-1]
        # No CUDA_VISIBLE_DEVICES: rank r on GPU r.
        gpus = "; ".join(d["provenance"].get("visible_devices") or ",".join(map(str, range(d["ranks"]))) for d in ds)
        step = sorted({next((k for k in ("autograd_rounds", "rounds") if k in d), "copies") for d in ds})
        parts.append(f"{ranks} rank{'s' if ranks != '1' else ''} at once (GPUs {gpus}) on {p['host']} {p['date'][:10]} "
                     f"({p['gpu']}, {p['cpu_count']} logical CPUs, torch {p['torch']}; d2h_pageable and cpu_grad_add "
                     f"from its {' / '.join(step)} part), raw {folder}")
    return ("measured by calibrate/scripts/torch_offload_bench.py, cores / ranks threads each, median of 5 samples "
            "of the slowest rank: " + "; ".join(parts) + "; merged by calibrate/scripts/merge_offload_calibration.py")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--bench", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    text = open(a.profile).read()
    prof = json.loads(text)
    section = {**torch_offload([json.load(open(p)) for p in a.bench]), "source": source_of(a.bench)}
    out = insert_section(text, section)
    merged = json.loads(out)
    prof["calibration"]["torch_offload"] = section
    if merged != prof:
        raise SystemExit("merge_offload_calibration: the inserted text does not parse back to the merged profile")
    with open(a.out, "w") as f:
        f.write(out)


if __name__ == "__main__":
    main()
