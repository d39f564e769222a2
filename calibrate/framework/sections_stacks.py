"""calibration.host_dispatch.stacks from the torch_stacks part: the host time each PyTorch stack
spends per layer, per micro-batch and per optimizer step, fitted from step times of a tiny GPT at two
depths (hwprofiles/README.md, "Calibration of stacks"; workloads/stacks/training_stacks.md). Needs
no torch.

The raw document's records: {"launches": [one document of torch_stacks.stacks per launch or world
size], "pipeline_actions": a document of torch_stacks.pipeline_actions or null}. Several launches at
one world size are combined figure by figure (the median of their medians), since the host dispatch
is noisy from one launch to the next (a single launch put one stack 31% off on its own host,
calibrate/README.md).
"""
import statistics

from .rounding import sig4

# The stacks' names in the profile (workloads/stacks/training_stacks.md), in the profile's order.
STACK_NAMES = {"single": "pytorch", "ddp": "pytorch-ddp", "fsdp2-zero2": "pytorch-fsdp:zero2",
               "fsdp2-zero3": "pytorch-fsdp:zero3", "fsdp2-offload": "pytorch-fsdp:offload",
               "pipe-gpipe": "pytorch-pipelining:gpipe", "pipe-1f1b": "pytorch-pipelining:1f1b"}


def med(d):
    return d["median"]


def depth_ends(runs):
    """The shallowest and the deepest of a stack's runs {"L<layers>": {...}}: (layers, run) each.
    The slope between them is the host time per layer, the intercept at the shallowest the rest; so
    a calibration at the depths of the models it will cost fits the slope there."""
    depths = sorted(int(k[1:]) for k in runs if k.startswith("L"))
    if len(depths) < 2:
        raise ValueError(f"a stack needs runs at two depths at least, got {sorted(runs)}")
    return (depths[0], runs[f"L{depths[0]}"]), (depths[-1], runs[f"L{depths[-1]}"])


def dp_stack(name, runs, fwd_share):
    """runs: {"L2": {...}, "L8": {...}} (or other depths) in microseconds (medians). A stack whose
    forward could not be timed alone (FSDP2 keeps state between a forward and its backward) is split
    by the single-GPU autocast stack's forward share."""
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
        sync = ((med(hi["forward_backward_sync"]) - med(lo["forward_backward_sync"])) -
                (med(hi["forward_backward"]) - med(lo["forward_backward"]))) / dl
    o_layer = (med(hi["optimizer"]) - med(lo["optimizer"])) / dl
    o_step = med(lo["optimizer"]) - d_lo * o_layer
    vals = dict(layer_forward_us=f_layer, layer_backward_us=b_layer, micro_batch_forward_us=f_mb,
                micro_batch_backward_us=b_mb, sync_layer_us=sync, optimizer_step_us=o_step, optimizer_layer_us=o_layer)
    clamped = [k for k, v in vals.items() if v < 0]
    entry = {"stack": name, **{k: sig4(max(0.0, v)) for k, v in vals.items()}}
    return entry, split, clamped


def combine_launches(docs):
    """The stacks of several launches: {stack: {world size: points}}. Documents of one world size are
    launches of the same calibration (fresh processes): each figure (stack, depth, quantity) becomes
    the median of the launches' medians. A stack measured at several world sizes keeps each."""
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
                raise ValueError(f"{name}: measured in some launches at {world} ranks, not in all")

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
    """The forward share of a pipeline stage's host time per layer, as torch_stacks.pipeline_actions
    times forward_one_chunk and backward_one_chunk apart: over every rank, the growth of the forward
    calls' time from 1 to 4 layers a stage over the growth of both, at the most micro-batches run at
    both depths on the tiny model."""
    runs = {(r["layers_per_stage"], r["micro_batches"]): r for r in actions["runs"]
            if r["schedule"] == schedule and r["model"] == "tiny"}
    counts = [m for (layers, m) in runs if layers == 1 and (4, m) in runs]
    if not counts:
        raise ValueError(f"{schedule}: no tiny-model runs at 1 and 4 layers a stage with the same micro-batches")
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
        raise ValueError(f"a pipeline needs runs at two stage depths by two micro-batch counts, got {sorted(runs)}")
    return s, layers, counts


def pipe_stack(name, runs, fwd_share):
    """runs at stage depths L in {La, Lb} and micro-batch counts M in {Ma, Mb}: step(L, M) = O + M (c + L l),
    l from the growth over the depth at each M, c from the growth over the micro-batches at each
    depth, O what is left at (La, Ma)."""
    s, (la, lb), (ma, mb) = pipe_points(runs)
    l = sum((s[lb, m] - s[la, m]) / ((lb - la) * m) for m in (ma, mb)) / 2
    c = sum((s[L, mb] - s[L, ma]) / (mb - ma) - L * l for L in (la, lb)) / 2
    o = s[la, ma] - ma * (c + la * l)
    vals = dict(layer_forward_us=l * fwd_share, layer_backward_us=l * (1 - fwd_share), micro_batch_forward_us=c / 2,
                micro_batch_backward_us=c / 2, sync_layer_us=0.0, optimizer_step_us=o, optimizer_layer_us=0.0)
    clamped = [k for k, v in vals.items() if v < 0]
    entry = {"stack": name, **{k: sig4(max(0.0, v)) for k, v in vals.items()}}
    return entry, clamped


def stack_entries(launches, actions=None):
    """The host_dispatch.stacks entries and one note per entry (how it was split, what was clamped)."""
    # A stack that failed in a launch has no points there; it is left out and its error said.
    failed = {stack: f"{error} (at {d['world_size']} ranks)" for d in launches for stack, error in d.get("errors", {}).items()}
    stacks = combine_launches(launches)
    single = next(iter(stacks["single"].values())) if "single" in stacks else None
    fwd_share = 1 / 3
    if single:
        (_, lo), (_, hi) = depth_ends(single)
        fwd_share = (med(hi["forward"]) - med(lo["forward"])) / (med(hi["forward_backward"]) - med(lo["forward_backward"]))
    entries, notes = [], []
    for key, name in STACK_NAMES.items():
        if key not in stacks:
            notes.append(f"{name}: not measured" + (f": {failed[key]}" if key in failed else ""))
            continue
        worlds = stacks[key]
        for world, points in sorted(worlds.items()):
            if key.startswith("pipe-") and actions:
                share, m = pipeline_forward_share(actions, key[len("pipe-"):])
                e, clamped = pipe_stack(name, points, share)
                split = (f"layer time split by its forward share as measured, {share:.3f} (forward_one_chunk against "
                         f"backward_one_chunk, 1 to 4 layers a stage, {m} micro-batches), micro-batch time half "
                         "forward, half backward")
            elif key.startswith("pipe-"):
                e, clamped = pipe_stack(name, points, fwd_share)
                split = "layer time split as the single-GPU autocast stack's, micro-batch time half forward, half backward"
            else:
                e, split, clamped = dp_stack(name, points, fwd_share)
            at = ""
            if len(worlds) > 1:  # one entry per rank count, each naming it
                e = {"stack": e["stack"], "ranks": world, **{k: v for k, v in e.items() if k != "stack"}}
                at = f" at {world} ranks"
            entries.append(e)
            notes.append(f"{name}{at}: {split}" + (f"; negative (noise) set to 0: {', '.join(clamped)}" if clamped else ""))
    return entries, notes


def stacks_source(launches, notes, where):
    """What the stacks' figures are and where they come from (host_dispatch.source)."""
    depths = " and ".join(str(d) for d in sorted({d for doc in launches for d in doc.get("depths", [2, 8])}))
    pipe_sets = {(doc["world_size"], tuple(doc.get("pipe_layers", [1, 4])), tuple(doc.get("pipe_micro_batches", [2, 4])))
                 for doc in launches if any(k.startswith("pipe-") for k in doc["stacks"])}
    pipes = "; ".join(
        "; ".join(f"{la} and {lb} layers per stage, {ma} and {mb} micro-batches"
                  for w, (la, lb), (ma, mb) in sorted(pipe_sets) if w == world) + f", {world} stages"
        for world in sorted({s[0] for s in pipe_sets})) or "not run"
    per_world = {}
    for d in launches:
        per_world.setdefault(d["world_size"], []).append(d.get("samples", 9))
    said = "; ".join(
        f"{w} rank{'s' if w > 1 else ''}: {len(n)} launch{'es' if len(n) > 1 else ''} of {n[0]} samples a figure"
        + (" (each figure the median of the launches' medians)" if len(n) > 1 else "") for w, n in sorted(per_world.items()))
    return (f"stacks measured {where}: step times of reports/validation/scripts/run_step.py's stacks on a GPT of "
            "hidden 64, 2 heads, sequence 64, vocabulary 512, micro-batch 1 (kernels shorter than their launches, so "
            f"wall time is host time), at {depths} layers (pipelines: {pipes}); per layer = slope over the depth, per "
            "micro-batch and per step = intercepts; " + said + "; " + "; ".join(notes))
