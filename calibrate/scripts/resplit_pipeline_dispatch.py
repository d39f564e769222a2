#!/usr/bin/env python3
"""(Maintainers' tool; trainsim-calibrate's profile writer splits by the measured share itself.)
Splits a profile's torch.distributed.pipelining host time per layer by the forward share measured
by calibrate/scripts/torch_pipeline_actions.py, for a profile whose stack step times are not at hand
to merge again (merge_torch_calibration.py --pipeline-actions does the same while merging):

    python3 calibrate/scripts/resplit_pipeline_dispatch.py --profile hwprofiles/h200x4-measured.json \
        --pipeline-actions DIR/torch_pipeline_actions.json \
        --out hwprofiles/h200x4-measured.json

Each pipelining entry keeps its host time per layer (forward + backward, the slope of the stack's
step times over the stage depth) and its other terms; only the split changes, from the single-GPU
autocast stack's forward share (borrowed: a pipeline's forward was not timed alone when the profile
was merged) to the pipeline's own, measured per schedule. Every other byte of the file stays.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.rounding import sig4  # noqa: E402
from framework.sections_stacks import pipeline_forward_share  # noqa: E402

BORROWED = "layer time split as the single-GPU autocast stack's"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--pipeline-actions", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    text = open(a.profile).read()
    prof = json.loads(text)
    actions = json.load(open(a.pipeline_actions))
    lines = text.split("\n")
    hd = prof["calibration"]["host_dispatch"]
    source = hd["source"]
    for entry in hd["stacks"]:
        if not entry["stack"].startswith("pytorch-pipelining:"):
            continue
        schedule = entry["stack"].split(":")[1]
        share, m = pipeline_forward_share(actions, schedule)
        total = entry["layer_forward_us"] + entry["layer_backward_us"]
        new = {"layer_forward_us": sig4(total * share), "layer_backward_us": sig4(total * (1 - share))}
        start = lines.index(f'          "stack": "{entry["stack"]}",')
        for i in range(start + 1, start + 3):
            key = lines[i].strip().split('"')[1]
            lines[i] = lines[i].split(":")[0] + f": {new[key]},"
        said = f"{entry['stack']}: {BORROWED}"
        if said not in source:
            sys.exit(f"{entry['stack']}: its source does not say \"{BORROWED}\"; nothing to resplit")
        now = (f"{entry['stack']}: layer time ({total:.1f} us) split by its forward share as measured, {share:.3f} "
               f"({a.pipeline_actions}: forward_one_chunk against backward_one_chunk, 1 to 4 layers a stage, {m} "
               f"micro-batches; resplit by calibrate/scripts/resplit_pipeline_dispatch.py)")
        source = source.replace(said, now)
    i = next(i for i, l in enumerate(lines) if l.startswith('      "source": ') and hd["source"] in l)
    lines[i] = '      "source": ' + json.dumps(source, ensure_ascii=False)
    out = "\n".join(lines)
    check = json.loads(out)
    for e in check["calibration"]["host_dispatch"]["stacks"]:
        print(e["stack"], e["layer_forward_us"], e["layer_backward_us"])
    with open(a.out, "w") as f:
        f.write(out)


if __name__ == "__main__":
    main()
