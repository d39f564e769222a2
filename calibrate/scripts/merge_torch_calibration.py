#!/usr/bin/env python3
"""Adds the PyTorch-side calibration to a profile written by trainsim-calibrate (maintainers' tool).

Not a user step: `trainsim-calibrate --full` runs these measurements in its framework driver and its
profile writer makes these sections (calibrate/framework/sections.py, whose fits this script
imports). This script splices them into a committed profile from the raw runs of several launches
and world sizes (reports/calibration/h200x2/host_dispatch/).

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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.sections import attention_table, cpu_optimizer_runs, host_dispatch_figures, kernel_curves  # noqa: E402
from framework.sections_stacks import (combine_launches, depth_ends, dp_stack, med, pipe_stack,  # noqa: E402
                                       pipeline_forward_share)


def curves(micro):
    """The kernel curves, by name (this script's order)."""
    return sorted(kernel_curves(micro.get("kernels", [])), key=lambda c: c["what"])


def attention(micro):
    return attention_table(micro.get("attention", []))


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
