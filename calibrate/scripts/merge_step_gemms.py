#!/usr/bin/env python3
"""Puts the GEMM rates measured inside training steps (torch_step_gemms.py) into profiles as
calibration.gemm_in_step, the table the replay prefers for unbatched products (sim/costs/cost_model.hpp).

    python3 calibrate/scripts/merge_step_gemms.py --gemms reports/calibration/step-gemms/torch_step_gemms.json \
        --raw reports/calibration/step-gemms/ hwprofiles/h200x4-measured.json reports/validation/measured/*/host.profile.json

One entry per product shape (m, n, k as the step's aten::mm saw it), its efficiency the measured
TFLOP/s over the target profile's bf16 peak; a shape measured in several configurations takes the
median of their medians; given the runs of several GPUs (one file each, --gemms A B ...), the shapes
every run has, each at the median over the GPUs. Rounded to 4 significant digits. calibration.gemm_in_step is added or
replaced; the rest of each file stays byte for byte (merge_offload_calibration.insert_section).
"""
import argparse
import json
import re
import statistics

from merge_offload_calibration import close_of, insert_section


def sig4(x):
    return float(f"{x:.4g}")


def rates(doc):
    if doc.get("errors"):
        raise SystemExit(f"the run has failed configurations: {doc['errors']}")
    by_shape = {}
    for c in doc["configs"]:
        for p in c["products"]:
            by_shape.setdefault((p["m"], p["n"], p["k"]), []).append(p["TFLOPs"])
    return {s: statistics.median(v) for s, v in sorted(by_shape.items())}


def rates_over_gpus(docs):
    """Per shape, the median over the runs (one GPU each) of each run's rate; a shape every run has."""
    per_run = [rates(d) for d in docs]
    shapes = set(per_run[0]).intersection(*per_run[1:])
    return {s: statistics.median(r[s] for r in per_run) for s in sorted(shapes)}


def section(docs, peak_tflops, raw):
    p = docs[0]["provenance"]
    products = [{"precision": "bf16", "m": float(m), "n": float(n), "k": float(k), "efficiency": sig4(t / peak_tflops)}
                for (m, n, k), t in rates_over_gpus(docs).items()]
    archs = sorted({(c["arch"], c["hidden"]) for c in docs[0]["configs"]})
    gpts = ", ".join(str(h) for a, h in archs if a == "gpt")
    llamas = " and ".join(f"hidden {h}" for a, h in archs if a == "llama")
    tokens = sorted({c["micro_batch"] * c["seq"] for c in docs[0]["configs"]})
    tokens_said = ", ".join(str(t) for t in tokens[:-1]) + (" and " if len(tokens) > 1 else "") + str(tokens[-1])
    gpus = "one GPU" if len(docs) == 1 else f"each of {len(docs)} GPUs at once, per shape the median over the GPUs"
    source = (f"measured by calibrate/scripts/torch_step_gemms.py on {p['host']} {p['date'][:10]} ({p['gpu']}, {gpus}, "
              f"torch {p['torch']}; raw {raw}): every aten::mm and aten::addmm of two profiled single-GPU training steps "
              f"(torch.autocast bf16, cross-entropy, fused AdamW) of two-layer models, the validation GPT at hidden "
              f"{gpts} and the Llama-style decoder at {llamas}, at {tokens_said} tokens a step; per shape the median "
              f"kernel time (a shape in several models: the median of theirs), efficiency = TFLOP/s / the profile's "
              f"bf16 peak ({peak_tflops} TFLOP/s). A step runs its products about 10% faster than its GPU runs them "
              f"back to back at its power limit (the in-step GEMM probe, reports/HISTORY.md)")
    return {"products": products, "source": source}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemms", required=True, nargs="+", help="torch_step_gemms.json of one run per GPU")
    ap.add_argument("--raw", required=True, help="where the raw run is committed (provenance)")
    ap.add_argument("profiles", nargs="+")
    a = ap.parse_args()
    docs = [json.load(open(f)) for f in a.gemms]
    for path in a.profiles:
        text = open(path).read()
        peak = json.loads(text)["gpu"]["peak_TFLOPs"]["bf16"]
        sec = section(docs, peak, a.raw)
        # One line a product, in this section only (316 shapes: the indented form would add 2500 lines
        # to each profile; the rest of the file stays as it was).
        text = insert_section(text, sec, "gemm_in_step")
        start = text.index('"gemm_in_step": {', text.index('"calibration": {'))
        end = close_of(text, start + len('"gemm_in_step": '))
        compact = re.sub(r'\{\s+"precision": ("[a-z0-9]+"),\s+"m": ([^,]+),\s+"n": ([^,]+),\s+"k": ([^,]+),\s+'
                         r'"efficiency": ([^\s]+)\s+\}',
                         r'{"precision": \1, "m": \2, "n": \3, "k": \4, "efficiency": \5}', text[start:end])
        text = text[:start] + compact + text[end:]
        assert json.loads(text)["calibration"]["gemm_in_step"] == sec
        open(path, "w").write(text)
        print(f"{path}: calibration.gemm_in_step, {len(sec['products'])} shapes")


if __name__ == "__main__":
    main()
