"""The profile sections of the framework parts, from their raw results: what the merge scripts did
as a user step is done here, inside trainsim-calibrate's profile writer (`python3 -m framework
sections`), for a run and for `trainsim-calibrate rebuild` alike. Needs no torch.

Input: {"parts": {part name: the raw document that part wrote}, "bf16_peak_TFLOPs": the profile's
bf16 peak (optional: calibration.gemm_in_step is an efficiency against it, so without it that
section is left out, and a note says so)}. Output: {"calibration": {section: value}, "notes":
[...]}, each section in the profile schema (hwprofiles/README.md, "Calibration of stacks"): the
profile writer puts "kernels" curves after its own, "host_dispatch" figures into its host_dispatch
object (its source appended to that object's), and the other sections as they are. Every figure a
median of the raw samples rounded to 4 significant digits (the precision of trainsim-calibrate's
own figures).
"""
import statistics

from .rounding import sig4
from .sections_offload import offload_source, torch_offload
from .sections_stacks import stack_entries, stacks_source
from .sections_steps import (attention_from_steps, attention_in_layer_layout, failed_configs, gemm_in_step,
                             gemm_in_step_source, with_other_lengths)

# The layer's kernels in its layouts that the replay costs by these names (sim/costs/cost_model.cpp,
# substitute_torch_curves); torch_layer_kernels' forward-and-backward figures are for comparison.
LAYER_KERNELS = ("bias_grad_bf16", "add_fp32_bf16", "split_cat_bf16", "swiglu_split_fwd_bf16", "rotary_split_fwd_bf16")


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


def _attention(parts):
    """Flash attention: as the steps ran it where torch_step_gemms ran, the sequence lengths they did
    not run timed alone (in the layer's layout where torch_layer_kernels ran, else contiguous)."""
    alone, alone_from, alone_part = [], None, None
    # A torch_layer_kernels run of one size timed no attention: then torch_attention's table, if any.
    layer = attention_in_layer_layout(parts["torch_layer_kernels"]["records"]["attention"]) \
        if "torch_layer_kernels" in parts else []
    if layer:
        alone, alone_from, alone_part = layer, "torch_layer.py attention: Q, K and V views of the fused QKV output", \
            "torch_layer_kernels"
    elif "torch_attention" in parts:
        alone, alone_from, alone_part = attention_table(parts["torch_attention"]["records"]), \
            "torch_attention.py: contiguous Q, K and V", "torch_attention"
    flops = ("FLOPs as FlashAttention-2 counts them (forward 2 b a s^2 d with the causal mask, backward 2.5x)")
    table = attention_from_steps(parts["torch_step_gemms"]["records"]) if "torch_step_gemms" in parts else []
    if table:
        p = parts["torch_step_gemms"]
        source = (f"flash attention's kernels inside training steps, measured {_where(p['provenance'])}torch_steps.py "
                  "step_gemms): the forward and backward kernels of torch scaled_dot_product_attention under "
                  "sdpa_kernel(FLASH_ATTENTION), causal, bf16, in two profiled single-GPU training steps of two-layer "
                  "models, per (batch x heads, head_dim) the median kernel time; " + flops)
        if alone:
            table = with_other_lengths(table, alone)
            source += f". Sequence lengths the steps did not run keep the figures timed alone ({alone_from})"
        return {"kernels": table, "source": source}
    if not alone:
        return None
    p = parts[alone_part]
    return {"kernels": alone, "source": (
        f"measured {_where(p['provenance'])}{alone_from}): torch scaled_dot_product_attention under "
        "sdpa_kernel(FLASH_ATTENTION), causal, bf16, per (batch x heads, seq, head_dim); forward and forward + "
        "backward timed with CUDA events (median of 5 samples of 10 calls after 3 warm-up calls), backward = "
        "difference; " + flops)}


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
    if "torch_layer_kernels" in parts:
        p = parts["torch_layer_kernels"]
        # A family or shape that failed is left out whole and said: these curves are extras the replay
        # substitutes for where absent (sim/costs/cost_model.cpp), not points of one curve.
        failed = [f"{a['shape']}: {a['error']}" for a in p["records"]["attention"] if "error" in a]
        failed += [f"{k['family']}: {k['error']}" for k in p["records"]["kernels"] if k.get("name") == "error"]
        if failed:
            notes.append(f"torch_layer_kernels: failed, left out: {'; '.join(failed)}")
        curves += kernel_curves([k for k in p["records"]["kernels"] if k.get("name") != "error"], only=set(LAYER_KERNELS))
        notes.append(f"calibration.kernels {', '.join('torch_' + k for k in LAYER_KERNELS)}: a PyTorch layer's kernels "
                     f"in the layouts the layer runs them, measured {_where(p['provenance'])}torch_layer.py kernels)")
    if curves:
        cal["kernels"] = curves
    attention = _attention(parts)
    if attention:
        cal["attention"] = attention
    if "torch_cpu_adam" in parts:
        p = parts["torch_cpu_adam"]
        cp = p["provenance"]
        counts = ", ".join(str(r["processes"]) for r in p["records"])
        cal["cpu_optimizers"] = {"runs": cpu_optimizer_runs(p["records"]), "source": (
            f"measured {_where(cp)}torch_host.py cpu_adam; {cp['cpu_count']} logical CPUs): "
            "torch.optim.AdamW(fused=True) over 64 M fp32 parameters (16 tensors) per process, "
            f"{counts} processes stepping at once with cores / processes threads each; median of 4 steps after "
            "one, the slowest process's time per step")}
    hd = {}
    if "torch_host" in parts:
        p = parts["torch_host"]
        hd = {**host_dispatch_figures(p["records"]), "source": (
            f"op_us, hook_us measured {_where(p['provenance'])}torch_host.py host): one eager operator with autograd "
            "on a 16-element CUDA tensor; a forward pre-hook or forward hook of an nn.Module")}
    if "torch_stacks" in parts:
        p = parts["torch_stacks"]
        launches, actions = p["records"]["launches"], p["records"].get("pipeline_actions")
        entries, stack_notes = stack_entries(launches, actions)
        said = stacks_source(launches, stack_notes, f"{_where(p['provenance'])}torch_stacks.py)")
        hd = {**hd, "stacks": entries, "source": (hd["source"] + "; " if "source" in hd else "") + said}
    if hd:
        cal["host_dispatch"] = hd
    if "torch_offload" in parts:
        p = parts["torch_offload"]
        cal["torch_offload"] = {**torch_offload(p["records"]), "source": offload_source(
            p["records"], f"{_where(p['provenance'])}torch_offload.py)")}
    if "torch_step_gemms" in parts:
        p = parts["torch_step_gemms"]
        if failed_configs(p["records"]):
            notes.append(f"torch_step_gemms: configurations that failed, left out: {failed_configs(p['records'])}")
        peak = doc.get("bf16_peak_TFLOPs")
        if peak is None:
            notes.append("calibration.gemm_in_step left out: the sections were not given the profile's bf16 peak, "
                         "which its efficiencies are relative to")
        elif not gemm_in_step(p["records"], peak):
            notes.append("calibration.gemm_in_step left out: no configuration of torch_step_gemms ran")
        else:
            cal["gemm_in_step"] = {"products": gemm_in_step(p["records"], peak), "source": gemm_in_step_source(
                p["records"], peak, _where(p["provenance"]) + "torch_steps.py step_gemms")}
    return {"calibration": cal, "notes": notes}
