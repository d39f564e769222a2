#!/usr/bin/env python3
"""Puts the GEMM rates measured inside training steps (torch_step_gemms.py) into profiles as
calibration.gemm_in_step, the table the replay prefers for unbatched products (sim/costs/cost_model.hpp).
A maintainers' tool for the committed profiles (one run per GPU of a machine); trainsim-calibrate's
profile writer makes this section from its torch_step_gemms part with the same code
(calibrate/framework/sections_steps.py).

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
import os
import re
import sys

from merge_offload_calibration import close_of, insert_section

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.sections_steps import failed_configs, gemm_in_step  # noqa: E402


def section(docs, peak_tflops, raw):
    p = docs[0]["provenance"]
    if failed_configs(docs):
        raise SystemExit(f"the run has failed configurations: {failed_configs(docs)}")
    products = gemm_in_step(docs, peak_tflops)
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
