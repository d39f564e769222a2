"""calibration.torch_offload from the torch_offload part: FSDP2's CPU-offload copies and its CPU
AdamW (hwprofiles/torch_offload_calibration.hpp, hwprofiles/README.md "torch_offload"). Needs no
torch.

The raw document's records: a list of torch_offload.offload documents, one per rank count measured
(one GPU measures one rank; the built-in profile's 2 and 4 ranks at once came from one process a GPU).
One curve per (what, ranks at once), bytes -> GB/s: d2h_pageable (blocking `x.to("cpu")` into a
fresh pageable tensor), d2h_pinned (`non_blocking=True`, fresh pinned), h2d_pinned (the
all-gather's copy-in), cpu_grad_add (`acc += y` on the CPU, GB/s of y). d2h_pageable and
cpu_grad_add come from the part of a document closest to how the step makes them: `autograd_rounds`
(on autograd's thread, where FSDP2 runs them), else `rounds`, else the back-to-back `copies`.
AdamW: per process, the rate over 16 tensors of 4 M parameters, and the seconds per tensor by
tensor size from every set (the fused CPU AdamW steps its list one tensor at a time, each a parallel
region of the process's threads: a shard of many small tensors costs more than its parameters at the
big-tensor rate).
"""
from .rounding import sig4

STEP_PATTERN = ("d2h_pageable", "cpu_grad_add")
CURVES = (("d2h_pageable", "d2h_pageable_GBps"), ("d2h_pinned", "d2h_pinned_GBps"),
          ("h2d_pinned", "h2d_pinned_GBps"), ("cpu_grad_add", "cpu_add_GBps"))


def seconds_per_tensor(runs):
    """Per tensor size (ascending): the runs of that size, their median seconds summed over their
    tensors summed, rounded to 4 significant digits."""
    by_size = {}
    for r in runs:
        seconds, tensors = by_size.get(r["elements_per_tensor"], (0.0, 0))
        by_size[r["elements_per_tensor"]] = (seconds + r["step_s"]["median"], tensors + r["tensors"])
    return [{"elements": float(e), "seconds": float(f"{s / n:.4g}")} for e, (s, n) in sorted(by_size.items())]


def step_part(doc):
    return next((k for k in ("autograd_rounds", "rounds") if k in doc), "copies")


def torch_offload(docs):
    """The section without its source: {"curves", "adamw"}."""
    docs = sorted(docs, key=lambda d: d["ranks"])
    curves, adamw = [], []
    for what, key in CURVES:
        for d in docs:
            rows = d[step_part(d)] if what in STEP_PATTERN else d["copies"]
            pts = [{"bytes": float(r["bytes"]), "GBps": sig4(r[key])} for r in sorted(rows, key=lambda r: r["bytes"])]
            curves.append({"what": what, "gpus": d["ranks"], "points": pts})
    for d in docs:
        big = [r for r in d["adam"] if r["tensors"] == 16 and r["elements_per_tensor"] == 1 << 22]
        if not big:
            raise ValueError(f"torch_offload at {d['ranks']} ranks: no AdamW run over 16 tensors of 4 M parameters")
        adamw.append({"processes": d["ranks"], "threads_per_process": d["threads_per_rank"],
                      "params_per_s_per_process": sig4(big[0]["params_per_s"]),
                      "seconds_per_tensor": seconds_per_tensor(d["adam"])})
    return {"curves": curves, "adamw": adamw}


def offload_source(docs, where):
    runs = "; ".join(
        f"{d['ranks']} rank{'s' if d['ranks'] > 1 else ''} at once ({d['provenance']['cpu_count']} logical CPUs, "
        f"{d['threads_per_rank']} threads a rank; d2h_pageable and cpu_grad_add from its {step_part(d)} part)"
        for d in sorted(docs, key=lambda d: d["ranks"]))
    return (f"measured {where}: FSDP2's CPU-offload copies (blocking x.to(\"cpu\") into fresh pageable memory, "
            "non_blocking into fresh pinned, pinned to GPU, acc += y on the CPU) and torch.optim.AdamW(fused=True) over "
            "pinned CPU tensors, median of 5 samples of the slowest rank: " + runs)
