"""The profile sections of the framework parts, from their raw results: what the merge scripts did
as a user step is done here, inside trainsim-calibrate's profile writer (`python3 -m framework
sections`), for a run and for `trainsim-calibrate rebuild` alike. Needs no torch.

Input: {"parts": {part name: the raw document that part wrote}}. Output: {"calibration": {section:
value}, "notes": [...]}, each section in the profile schema (hwprofiles/README.md, "Calibration of
stacks"): the profile writer puts "kernels" curves after its own, "host_dispatch" figures into its
host_dispatch object (its source appended to that object's), and the other sections as they are. Every figure a median of the raw samples
rounded to 4 significant digits (the precision of trainsim-calibrate's own figures).
"""
import statistics


def sig4(x):
    if x == 0:
        return 0.0
    return float(f"{x:.4g}")


def kernel_curves(records, only=None):
    """One curve "torch_<name>" per kernel (bytes -> GB/s), points ascending by bytes; where two
    records share a byte count (FSDP2's copy-out and chunk_cat move the unsharded unit, the same
    bytes at 2 and 4 ranks) their mean. A failed record fails the merge: a curve with a hole would
    be interpolated over it silently."""
    by_name = {}
    for r in records:
        if r.get("name") == "error":
            raise ValueError(f"{r.get('unit') or r.get('family')} failed: {r['error']}")
        if only is not None and r["name"] not in only:
            continue
        by_name.setdefault(r["name"], {}).setdefault(float(r["bytes"]), []).append(r["GBps_median"])
    return [{"what": "torch_" + name,
             "points": [{"bytes": b, "GBps": sig4(statistics.mean(v))} for b, v in sorted(points.items())]}
            for name, points in by_name.items()]


def attention_table(records):
    """Flash attention per (head_dim, seq, batch x heads): forward and backward TFLOP/s."""
    return [{"head_dim": a["head_dim"], "seq": a["seq"], "batch_heads": a["batch"] * a["heads"], "causal": a["causal"],
             "forward_TFLOPs": sig4(a["forward_TFLOPs"]), "backward_TFLOPs": sig4(a["backward_TFLOPs"])}
            for a in records]


def cpu_optimizer_runs(records):
    return [{"what": r["what"], "processes": r["processes"], "threads_per_process": r["threads_per_process"],
             "params_per_s_per_process": sig4(r["params_per_s_per_process"])} for r in records]


def host_dispatch_figures(host):
    """op_us: one eager operator with autograd; hook_us: one module hook (never below 0: the
    difference of two medians)."""
    return {"op_us": sig4(host["op_autograd_us"]["median"]), "hook_us": sig4(max(0.0, host["hook_us"]))}


def _where(prov):
    return (f"on {prov['host']} {prov['date'][:10]} ({prov['gpu']}, torch {prov['torch']}, CUDA {prov['cuda']}; "
            f"trainsim-calibrate's framework driver, calibrate/framework/")


def sections(doc):
    parts = doc["parts"]
    cal, notes = {}, []
    curves = []
    for name, module in (("torch_kernels", "torch_kernels.py kernels"), ("torch_fsdp_kernels", "torch_kernels.py fsdp_kernels")):
        if name in parts:
            p = parts[name]
            curves += kernel_curves(p["records"])
            notes.append(f"calibration.kernels torch_*: {name} measured {_where(p['provenance'])}{module}), "
                         f"{p['sizes']} sizes")
    if curves:
        cal["kernels"] = curves
    if "torch_attention" in parts:
        p = parts["torch_attention"]
        cal["attention"] = {"kernels": attention_table(p["records"]), "source": (
            f"measured {_where(p['provenance'])}torch_attention.py): torch scaled_dot_product_attention under "
            "sdpa_kernel(FLASH_ATTENTION), causal, bf16, per (batch x heads, seq, head_dim); forward and forward + "
            "backward timed with CUDA events (median of 5 samples of 10 calls after 3 warm-up calls), backward = "
            "difference; FLOPs as FlashAttention-2 counts them (forward 2 b a s^2 d with the causal mask, backward 2.5x)")}
    if "torch_cpu_adam" in parts:
        p = parts["torch_cpu_adam"]
        cp = p["provenance"]
        counts = ", ".join(str(r["processes"]) for r in p["records"])
        cal["cpu_optimizers"] = {"runs": cpu_optimizer_runs(p["records"]), "source": (
            f"measured {_where(cp)}torch_host.py cpu_adam; {cp['cpu_count']} logical CPUs): "
            "torch.optim.AdamW(fused=True) over 64 M fp32 parameters (16 tensors) per process, "
            f"{counts} processes stepping at once with cores / processes threads each; median of 4 steps after "
            "one, the slowest process's time per step")}
    if "torch_host" in parts:
        p = parts["torch_host"]
        cal["host_dispatch"] = {**host_dispatch_figures(p["records"]), "source": (
            f"op_us, hook_us measured {_where(p['provenance'])}torch_host.py host): one eager operator with autograd "
            "on a 16-element CUDA tensor; a forward pre-hook or forward hook of an nn.Module")}
    return {"calibration": cal, "notes": notes}
