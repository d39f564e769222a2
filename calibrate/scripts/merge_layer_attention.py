#!/usr/bin/env python3
"""(Maintainers' tool for the committed profiles; trainsim-calibrate's profile writer makes this table
from its torch_step_gemms and torch_layer_kernels parts with the same code,
calibrate/framework/sections_steps.py.)
Replaces profiles' calibration.attention with flash attention timed in the layout a PyTorch
stack's layer runs it (torch_layer_kernels.py's "attention": Q, K and V views of the fused QKV
output, the output gradient in the layout flash attention wrote its output), or, with --step-runs,
with flash attention's kernels inside training steps (torch_step_gemms.py, one run per GPU: per
shape the median over the GPUs), to which --micro then adds only the sequence lengths the steps did
not run.

    python3 calibrate/scripts/merge_layer_attention.py --micro reports/calibration/layer-kernels/torch_layer_kernels.json \
        --source "..." hwprofiles/h200x4-measured.json reports/validation/measured/*/host.profile.json

The table keeps its keys (head_dim, seq, batch_heads, causal, forward_TFLOPs, backward_TFLOPs; the
cost model looks a pass up by its nearest shape, sim/costs/cost_model.hpp): the multi-head shapes only,
since an entry has no key/value head count and the replay costs grouped-query attention's group
sums as kernels of their own (workloads/stacks/stack_layer.cpp). Rounded to 4 significant digits. Each
profile is edited as text (the "attention" object of "calibration" replaced, at its indent), so the
rest of the file stays byte for byte; each is parsed again afterwards to check it.
"""
import argparse
import json
import os
import sys

from merge_offload_calibration import close_of  # the bracket closing an array or object, strings skipped

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.sections_steps import attention_from_steps, attention_in_layer_layout, failed_configs  # noqa: E402


def table(micro):
    return attention_in_layer_layout(micro["attention"])


def table_from_steps(docs):
    if failed_configs(docs):
        raise SystemExit(f"the run has failed configurations: {failed_configs(docs)}")
    return attention_from_steps(docs)


def replace(path, section):
    text = open(path).read()
    cal = text.index('"calibration": {')
    key = text.index('"attention": {', cal)
    if key > close_of(text, cal + len('"calibration": ')):
        raise SystemExit(f"{path}: no calibration.attention to replace")
    open_at = key + len('"attention": ')
    close_at = close_of(text, open_at)
    indent = key - (text.rfind("\n", 0, key) + 1)
    body = json.dumps(section, indent=2).replace("\n", "\n" + " " * indent)
    text = text[:open_at] + body + text[close_at + 1:]
    check = json.loads(text)
    assert check["calibration"]["attention"] == section
    open(path, "w").write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--micro", help="torch_layer_kernels.json: flash attention timed alone in the layer's layout "
                    "(with --step-runs: only its sequence lengths the steps did not run)")
    ap.add_argument("--step-runs", nargs="+", help="torch_step_gemms.json of one run per GPU: flash attention's "
                    "kernels inside training steps")
    ap.add_argument("--source", required=True, help="the table's provenance (calibration.attention.source)")
    ap.add_argument("profiles", nargs="+")
    args = ap.parse_args()
    if not args.micro and not args.step_runs:
        ap.error("give --micro, --step-runs or both")
    alone = table(json.load(open(args.micro))) if args.micro else []
    if args.step_runs:
        kernels = table_from_steps([json.load(open(f)) for f in args.step_runs])
        # Sequence lengths the steps did not run keep the figures timed alone (the steps ran 2048 tokens).
        seqs = {k["seq"] for k in kernels}
        kernels += [k for k in alone if k["seq"] not in seqs]
    else:
        kernels = alone
    section = {"kernels": kernels, "source": args.source}
    for p in args.profiles:
        replace(p, section)
        print(f"{p}: calibration.attention, {len(section['kernels'])} shapes")


if __name__ == "__main__":
    main()
