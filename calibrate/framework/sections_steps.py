"""calibration.gemm_in_step and calibration.attention from the torch_step_gemms part (GEMMs and
flash attention as training steps run them), with the torch_layer_kernels part's attention for the
sequence lengths the steps do not run. Needs no torch.

The step part's records: a list of torch_steps.step_gemms runs, one per GPU (one on one GPU; the
built-in profile's came from each GPU of a machine at once, per shape the median over the GPUs).
"""
import statistics

from .rounding import sig4


def failed_configs(runs):
    """What failed, one line (the configurations that ran still make the tables: a missing shape is
    costed from the GEMM table, not interpolated over)."""
    return "; ".join(f"{e['config']}: {e['error']}" for r in runs for e in r.get("errors", []))


def rates(run):
    """Per product shape (m, n, k), the median of the configurations' median TFLOP/s."""
    by_shape = {}
    for c in run["configs"]:
        for p in c["products"]:
            by_shape.setdefault((p["m"], p["n"], p["k"]), []).append(p["TFLOPs"])
    return {s: statistics.median(v) for s, v in sorted(by_shape.items())}


def rates_over_gpus(runs):
    """Per shape every run has, the median over the runs (one GPU each) of each run's rate."""
    per_run = [rates(r) for r in runs]
    shapes = set(per_run[0]).intersection(*per_run[1:])
    return {s: statistics.median(r[s] for r in per_run) for s in sorted(shapes)}


def gemm_in_step(runs, peak_tflops):
    """The products, efficiency = measured TFLOP/s over the profile's bf16 peak (the base profile's
    datasheet figure, as trainsim-calibrate's own gemm table)."""
    return [{"precision": "bf16", "m": float(m), "n": float(n), "k": float(k), "efficiency": sig4(t / peak_tflops)}
            for (m, n, k), t in rates_over_gpus(runs).items()]


def gemm_in_step_source(runs, peak_tflops, where):
    configs = runs[0]["configs"]
    archs = sorted({(c["arch"], c["hidden"]) for c in configs})
    gpts = ", ".join(str(h) for a, h in archs if a == "gpt") or "none"
    llamas = " and ".join(f"hidden {h}" for a, h in archs if a == "llama") or "none"
    tokens = sorted({c["micro_batch"] * c["seq"] for c in configs})
    tokens_said = ", ".join(str(t) for t in tokens[:-1]) + (" and " if len(tokens) > 1 else "") + str(tokens[-1])
    gpus = "one GPU" if len(runs) == 1 else f"each of {len(runs)} GPUs at once, per shape the median over the GPUs"
    return (f"measured {where}; {gpus}): every aten::mm and aten::addmm of two profiled single-GPU training steps "
            "(torch.autocast bf16, cross-entropy, fused AdamW) of two-layer models, the validation GPT at hidden "
            f"{gpts} and the Llama-style decoder at {llamas}, at {tokens_said} tokens a step; per shape the median kernel "
            "time (a shape in several models: the median of theirs), efficiency = TFLOP/s / the profile's bf16 peak "
            f"({peak_tflops} TFLOP/s). A step runs its products about 10% faster than its GPU runs them back to back "
            "at its power limit (the in-step GEMM probe, reports/HISTORY.md)")


def attention_from_steps(runs):
    """Flash attention as the steps ran it: the multi-head configurations' shapes (a table entry has
    no key/value head count; the replay costs grouped-query attention's group sums as kernels of their
    own, workloads/stacks/stack_layer.cpp), per shape the median over the GPUs."""
    by_key = {}
    for run in runs:
        for c in run["configs"]:
            a = c.get("attention")  # runs before the steps recorded attention have none
            if a is None or a["kv_heads"] != c["heads"] or "forward_TFLOPs" not in a:
                continue
            by_key.setdefault((a["head_dim"], a["seq"], a["batch_heads"]), []).append(
                (a["forward_TFLOPs"], a["backward_TFLOPs"]))
    return [{"head_dim": d, "seq": s, "batch_heads": bh, "causal": True,
             "forward_TFLOPs": sig4(statistics.median(f for f, _ in v)),
             "backward_TFLOPs": sig4(statistics.median(b for _, b in v))}
            for (d, s, bh), v in sorted(by_key.items())]


def attention_in_layer_layout(records):
    """torch_layer_kernels' flash attention (Q, K, V views of the fused QKV output), multi-head shapes;
    a shape that failed is left out (the replay looks a pass up at its nearest shape)."""
    out = []
    for a in records:
        if "error" in a or a["kv_heads"] != a["heads"]:
            continue
        out.append({"head_dim": a["head_dim"], "seq": a["seq"], "batch_heads": a["batch"] * a["heads"],
                    "causal": a["causal"], "forward_TFLOPs": sig4(a["forward_TFLOPs"]),
                    "backward_TFLOPs": sig4(a["backward_TFLOPs"])})
    return out


def with_other_lengths(step_table, alone):
    """The steps' table, then the entries timed alone at sequence lengths the steps did not run."""
    seqs = {k["seq"] for k in step_table}
    return step_table + [k for k in alone if k["seq"] not in seqs]
