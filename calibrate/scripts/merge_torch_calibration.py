#!/usr/bin/env python3
"""Adds the PyTorch-side calibration to a profile written by trainsim-calibrate.

    python3 calibrate/scripts/merge_torch_calibration.py --profile RUN/calib/profile.json \
        --micro RUN/torch/torch_microbench.json --cpu RUN/torch_cpu/torch_microbench.json \
        --stacks RUN/torch/torch_stack_dispatch_w1.json RUN/torch/torch_stack_dispatch_w2.json \
        --out hwprofiles/h200x4-measured.json

    python3 calibrate/scripts/merge_torch_calibration.py --profile hwprofiles/h200x2-measured.json \
        --dispatch RAW/calib/profile.json --micro RAW/torch/torch_microbench.json \
        --stacks RAW/torch/torch_stack_dispatch_w1.json RAW/torch/torch_stack_dispatch_w2.json \
        --raw "reports/calibration/h200x2/host_dispatch/ (...)" --out hwprofiles/h200x2-measured.json

The second form adds only what was measured: --dispatch takes kernel_launch_us and gpu_kernel_us
from a run of `trainsim-calibrate --only host_dispatch` (a profile that had no host_dispatch part),
--cpu may be left out (no cpu_optimizers section), and a torch_microbench.json of `--parts host`
adds no kernel curves and no attention table.

Sections added (schema: hwprofiles/README.md, "Calibration of stacks"), every figure a median of
the raw files' samples rounded to 4 significant digits, each section citing its source:
- calibration.kernels: one curve "torch_<kernel>" per PyTorch kernel (bytes -> GB/s);
- calibration.attention: flash attention forward and backward TFLOP/s per shape;
- calibration.cpu_optimizers: PyTorch's fused CPU AdamW per process, 1, 2 and 4 processes at once;
- calibration.host_dispatch: op_us and hook_us, and per stack the host time per layer, per
  micro-batch and per optimizer step, from the tiny-model step times (derivation below).
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.sections import attention_table, cpu_optimizer_runs, host_dispatch_figures, kernel_curves, sig4  # noqa: E402


def curves(micro):
    """The kernel curves, by name (this script's order)."""
    return sorted(kernel_curves(micro.get("kernels", [])), key=lambda c: c["what"])


def attention(micro):
    return attention_table(micro.get("attention", []))


def med(d):
    return d["median"]


def depth_ends(runs):
    """The shallowest and the deepest of a stack's runs {"L<layers>": {...}}: (layers, run) each.
    The slope between them is the host time per layer, the intercept at the shallowest the rest; so
    a calibration at the depths of the models it will cost (torch_stack_dispatch.py --depths) fits
    the slope there."""
    depths = sorted(int(k[1:]) for k in runs if k.startswith("L"))
    if len(depths) < 2:
        sys.exit(f"need runs at two depths at least, got {sorted(runs)}")
    return (depths[0], runs[f"L{depths[0]}"]), (depths[-1], runs[f"L{depths[-1]}"])


def dp_stack(name, runs, fwd_share):
    """runs: {"L2": {...}, "L8": {...}} (or other depths) in microseconds (medians)."""
    (d_lo, lo), (d_hi, hi) = depth_ends(runs)
    dl = float(d_hi - d_lo)
    fb_layer = (med(hi["forward_backward"]) - med(lo["forward_backward"])) / dl
    if "forward" in lo:
        f_layer = (med(hi["forward"]) - med(lo["forward"])) / dl
        f_mb = med(lo["forward"]) - d_lo * f_layer
        split = "forward timed alone"
    else:
        f_layer = fb_layer * fwd_share
        f_mb = None
        split = f"forward share {fwd_share:.3f} of the single-GPU autocast stack (its forward cannot be timed alone)"
    b_layer = fb_layer - f_layer
    fb_mb = med(lo["forward_backward"]) - d_lo * fb_layer
    if f_mb is None:
        f_mb = fb_mb * fwd_share
    b_mb = fb_mb - f_mb
    sync = 0.0
    if "forward_backward_sync" in lo:
        sync = ((med(hi["forward_backward_sync"]) - med(lo["forward_backward_sync"])) - (med(hi["forward_backward"]) -
                                                                                         med(lo["forward_backward"]))) / dl
    o_layer = (med(hi["optimizer"]) - med(lo["optimizer"])) / dl
    o_step = med(lo["optimizer"]) - d_lo * o_layer
    vals = dict(layer_forward_us=f_layer, layer_backward_us=b_layer, micro_batch_forward_us=f_mb,
                micro_batch_backward_us=b_mb, sync_layer_us=sync, optimizer_step_us=o_step, optimizer_layer_us=o_layer)
    clamped = [k for k, v in vals.items() if v < 0]
    entry = {"stack": name, **{k: sig4(max(0.0, v)) for k, v in vals.items()}}
    return entry, split, clamped


def combine_launches(docs):
    """The stacks of several torch_stack_dispatch files: {stack: {world size: points}}. Files of one
    world size are launches of the same calibration (fresh processes, run_rows_with_host_calibration.sh): each
    figure (stack, depth, quantity) becomes the median of the launches' medians, with every
    launch's kept as "launches". A stack measured at several world sizes keeps each."""
    by_world = {}
    for d in docs:
        by_world.setdefault(d["world_size"], []).append(d)
    stacks = {}
    for world in sorted(by_world):
        runs = by_world[world]
        if len(runs) == 1:
            for name, points in runs[0]["stacks"].items():
                stacks.setdefault(name, {})[world] = points
            continue
        for name in runs[0]["stacks"]:
            if not all(name in r["stacks"] for r in runs):
                sys.exit(f"{name}: measured in some launches at {world} ranks, not in all")
            def combine(figures_of):
                # A figure is {"median", "min", "max", "samples"}; a point holds one (pipelines) or
                # several by quantity (data-parallel stacks).
                first = figures_of[0]
                if "median" in first:
                    meds = [f["median"] for f in figures_of]
                    return {"median": statistics.median(meds), "launches": meds}
                return {q: combine([f[q] for f in figures_of]) for q in first}
            stacks.setdefault(name, {})[world] = {point: combine([r["stacks"][name][point] for r in runs])
                                                  for point in runs[0]["stacks"][name]}
    return stacks


def pipeline_forward_share(actions, schedule):
    """The forward share of a pipeline stage's host time per layer, measured by
    calibrate/scripts/torch_pipeline_actions.py, which times forward_one_chunk and backward_one_chunk
    apart: over every rank, the growth of the forward calls' time from 1 to 4 layers a stage over the
    growth of both, at the most micro-batches run at both depths on the tiny model."""
    runs = {(r["layers_per_stage"], r["micro_batches"]): r for r in actions["runs"]
            if r["schedule"] == schedule and r["model"] == "tiny"}
    counts = [m for (layers, m) in runs if layers == 1 and (4, m) in runs]
    if not counts:
        raise SystemExit(f"{schedule}: no tiny-model runs at 1 and 4 layers a stage with the same micro-batches")
    m = max(counts)
    lo, hi = runs[(1, m)]["per_rank"], runs[(4, m)]["per_rank"]
    fwd = sum(b["forward_one_chunk"] - a["forward_one_chunk"] for a, b in zip(lo, hi))
    both = sum(b["forward_one_chunk"] + b["backward_one_chunk"] - a["forward_one_chunk"] - a["backward_one_chunk"]
               for a, b in zip(lo, hi))
    return fwd / both, m


def pipe_points(runs):
    """A pipeline's runs {"L<layers>_M<micro-batches>": figure} as {(layers, micro-batches): median
    step}, with its two stage depths and its two micro-batch counts."""
    s = {tuple(int(x[1:]) for x in k.split("_")): med(v) for k, v in runs.items()}
    layers, counts = sorted({p[0] for p in s}), sorted({p[1] for p in s})
    if len(layers) != 2 or len(counts) != 2 or len(s) != 4:
        sys.exit(f"a pipeline needs runs at two stage depths by two micro-batch counts, got {sorted(runs)}")
    return s, layers, counts


def pipe_stack(name, runs, fwd_share):
    """runs at stage depths L in {La, Lb} and micro-batch counts M in {Ma, Mb} ("L1_M2" ... "L4_M4" by
    default): step(L, M) = O + M (c + L l), l from the growth over the depth at each M, c from the
    growth over the micro-batches at each depth, O what is left at (La, Ma)."""
    s, (la, lb), (ma, mb) = pipe_points(runs)
    l = sum((s[lb, m] - s[la, m]) / ((lb - la) * m) for m in (ma, mb)) / 2
    c = sum((s[L, mb] - s[L, ma]) / (mb - ma) - L * l for L in (la, lb)) / 2
    o = s[la, ma] - ma * (c + la * l)
    vals = dict(layer_forward_us=l * fwd_share, layer_backward_us=l * (1 - fwd_share), micro_batch_forward_us=c / 2,
                micro_batch_backward_us=c / 2, sync_layer_us=0.0, optimizer_step_us=o, optimizer_layer_us=0.0)
    clamped = [k for k, v in vals.items() if v < 0]
    entry = {"stack": name, **{k: sig4(max(0.0, v)) for k, v in vals.items()}}
    return entry, clamped


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--micro", required=True)
    ap.add_argument("--cpu", help="torch_microbench.json of --parts cpu_adam (left out: no cpu_optimizers section)")
    ap.add_argument("--dispatch", help="profile.json of trainsim-calibrate --only host_dispatch, for kernel_launch_us and "
                    "gpu_kernel_us when --profile has none")
    ap.add_argument("--raw", default="reports/calibration/h200x4/ (torch_microbench.json, torch_cpu_adam.json, "
                    "torch_stack_dispatch_w*.json)", help="where the raw files are committed (provenance)")
    ap.add_argument("--stacks", nargs="+", required=True)
    ap.add_argument("--pipeline-actions", help="torch_pipeline_actions.json: the pipelines' forward share of a layer's "
                    "host time as measured (otherwise the single-GPU autocast stack's)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    text = open(a.profile).read()
    prof = json.loads(text)
    before = json.loads(text)
    micro = json.load(open(a.micro))
    cpu = json.load(open(a.cpu)) if a.cpu else {}
    stack_docs = [json.load(open(f)) for f in a.stacks]
    depths = sorted({d for doc in stack_docs for d in doc.get("depths", [2, 8])})
    depths_said = " and ".join(str(d) for d in depths)
    # The pipelines' shapes, per rank count (one stage a rank: a 4-rank run is a 4-stage pipeline).
    pipe_sets = {(doc["world_size"], tuple(doc.get("pipe_layers", [1, 4])), tuple(doc.get("pipe_micro_batches", [2, 4])))
                 for doc in stack_docs if any(k.startswith("pipe-") for k in doc["stacks"])}
    pipes_said = "; ".join(
        "; ".join(f"{la} and {lb} layers per stage, {ma} and {mb} micro-batches"
                  for w, (la, lb), (ma, mb) in sorted(pipe_sets) if w == world) + f", {world} stages"
        for world in sorted({s[0] for s in pipe_sets})) or "not run"
    stacks = combine_launches(stack_docs)
    per_world = {}
    for d in stack_docs:
        per_world.setdefault(d["world_size"], []).append(d.get("samples", 9))
    launches_note = "; ".join(
        f"{w} rank{'s' if w > 1 else ''}: {len(n)} launch{'es' if len(n) > 1 else ''} of {n[0]} samples a figure"
        + (" (each figure the median of the launches' medians)" if len(n) > 1 else "") for w, n in sorted(per_world.items()))
    cal = prof.setdefault("calibration", {})
    cal.setdefault("kernels", []).extend(curves(micro))
    mp = micro["provenance"]
    where = f"on {mp['host']} {mp['date'][:10]} ({mp['gpu']}, torch {mp['torch']})"
    ks = attention(micro)
    if ks:
        cal["attention"] = {"kernels": ks, "source": (
            f"measured by calibrate/scripts/torch_microbench.py {where}: torch scaled_dot_product_attention under "
            "sdpa_kernel(FLASH_ATTENTION), causal, bf16, per (batch x heads, seq, head_dim); forward and forward + "
            "backward timed with CUDA events (median of 5 samples of 10 calls after 3 warm-up calls), backward = "
            "difference; FLOPs as FlashAttention-2 counts them (forward 2 b a s^2 d with the causal mask, backward 2.5x)")}
    runs = cpu_optimizer_runs(cpu.get("cpu_adam", []))
    if runs:
        cp = cpu["provenance"]
        cal["cpu_optimizers"] = {"runs": runs, "source": (
            f"measured by calibrate/scripts/torch_microbench.py --parts cpu_adam on {cp['host']} {cp['date'][:10]} "
            f"({cp['cpu_count']} logical CPUs, torch {cp['torch']}): torch.optim.AdamW(fused=True) over 64 M fp32 "
            "parameters (16 tensors) per process, 1, 2 or 4 processes stepping at once with cores / processes "
            "threads each; median of 4 steps after one, the slowest process's time per step")}
    hd = cal.setdefault("host_dispatch", {})
    if a.dispatch:
        run = json.load(open(a.dispatch))
        part = run["calibration"]["host_dispatch"]
        for k in ("kernel_launch_us", "gpu_kernel_us", "source"):
            if k in part:
                hd[k] = part[k]
        rp = run["provenance"]
        hd["source"] = (hd.get("source", "") + f" (trainsim-calibrate --only host_dispatch on {rp['host']} "
                        f"{rp['date'][:10]}, {rp['gpu']['devices'][0]['name']} x {rp['gpu']['visible']})")
    host = micro.get("host", {})
    if host:
        hd.update(host_dispatch_figures(host))
    single = next(iter(stacks["single"].values())) if "single" in stacks else None
    fwd_share = 1 / 3
    if single:
        (_, lo), (_, hi) = depth_ends(single)
        fwd_share = (med(hi["forward"]) - med(lo["forward"])) / (med(hi["forward_backward"]) - med(lo["forward_backward"]))
    names = {"single": "pytorch", "ddp": "pytorch-ddp", "fsdp2-zero2": "pytorch-fsdp:zero2",
             "fsdp2-zero3": "pytorch-fsdp:zero3", "fsdp2-offload": "pytorch-fsdp:offload",
             "pipe-gpipe": "pytorch-pipelining:gpipe", "pipe-1f1b": "pytorch-pipelining:1f1b"}
    entries, notes = [], []
    for key in ["single", "ddp", "fsdp2-zero2", "fsdp2-zero3", "fsdp2-offload", "pipe-gpipe", "pipe-1f1b"]:
        if key not in stacks:
            notes.append(f"{names[key]}: not measured")
            continue
        worlds = stacks[key]
        for world, points in sorted(worlds.items()):
            if key.startswith("pipe-") and a.pipeline_actions:
                share, m = pipeline_forward_share(json.load(open(a.pipeline_actions)), key[len("pipe-"):])
                e, clamped = pipe_stack(names[key], points, share)
                split = (f"layer time split by its forward share as measured, {share:.3f} (torch_pipeline_actions.py: "
                         f"forward_one_chunk against backward_one_chunk, 1 to 4 layers a stage, {m} micro-batches), "
                         "micro-batch time half forward, half backward")
            elif key.startswith("pipe-"):
                e, clamped = pipe_stack(names[key], points, fwd_share)
                split = "layer time split as the single-GPU autocast stack's, micro-batch time half forward, half backward"
            else:
                e, split, clamped = dp_stack(names[key], points, fwd_share)
            at = ""
            if len(worlds) > 1:  # one entry per rank count, each naming it
                e = {"stack": e["stack"], "ranks": world, **{k: v for k, v in e.items() if k != "stack"}}
                at = f" at {world} ranks"
            entries.append(e)
            notes.append(f"{names[key]}{at}: {split}" + (f"; negative (noise) set to 0: {', '.join(clamped)}" if clamped else ""))
    hd["stacks"] = entries
    sp = json.load(open(a.stacks[0]))["provenance"]
    hd["source"] = (hd.get("source", "") + ("; " if hd.get("source") else "") +
                    f"op_us, hook_us: calibrate/scripts/torch_microbench.py {where} (one eager operator with autograd on a "
                    "16-element CUDA tensor; a forward pre-hook or forward hook of an nn.Module); stacks: "
                    f"calibrate/scripts/torch_stack_dispatch.py on {sp['host']} {sp['date'][:10]}: step times of "
                    "reports/validation/scripts/run_step.py's stacks on a GPT of hidden 64, 2 heads, sequence 64, "
                    "vocabulary 512, micro-batch 1 (kernels shorter than their launches, so wall time is host time), at "
                    f"{depths_said} layers (pipelines: {pipes_said}); per layer = "
                    "slope over the depth, per micro-batch and per step = intercepts; " + launches_note + "; " + "; ".join(notes))
    order = ["kernel_launch_us", "gpu_kernel_us", "op_us", "hook_us", "stacks", "source"]
    cal["host_dispatch"] = {k: hd[k] for k in order if k in hd}
    prof.setdefault("provenance", {})["torch_calibration"] = {
        "scripts": ["calibrate/scripts/torch_microbench.py", "calibrate/scripts/torch_stack_dispatch.py",
                    "calibrate/scripts/merge_torch_calibration.py"],
        "raw": a.raw}
    if text == json.dumps(before, indent=2) + "\n":
        out = json.dumps(prof, indent=2) + "\n"
    else:
        out = splice(text, before, prof)
    with open(a.out, "w") as f:
        f.write(out)
    print("\n".join(notes))


def splice(text, before, prof):
    """trainsim-calibrate's layout (not json.dumps(indent=2)): the new sections are spliced in as text,
    every other byte stays. Only new keys are supported (calibration.*, provenance.torch_calibration)."""
    lines = text.split("\n")
    for top in ("calibration", "provenance"):
        new = [k for k in prof[top] if k not in before[top]]
        changed = [k for k in before[top] if prof[top][k] != before[top][k]]
        if changed:
            sys.exit(f"{top}: would change {', '.join(changed)}; splicing adds new keys only")
        if not new:
            continue
        start = lines.index(f'  "{top}": {{')
        end = next(i for i in range(start + 1, len(lines)) if lines[i] in ("  }", "  },"))
        block = []
        for k in new:
            body = json.dumps(prof[top][k], indent=2).split("\n")
            block.append(f'    "{k}": ' + "\n".join([body[0]] + ["    " + b for b in body[1:]]))
        lines[end - 1] += ","
        lines[end:end] = ",\n".join(block).split("\n")
    out = "\n".join(lines)
    if json.loads(out) != prof:
        sys.exit("splice: the result does not read back as the merged profile")
    return out


if __name__ == "__main__":
    main()
