#!/usr/bin/env python3
"""Pipeline rows written before branch reference3 held the mean over stages in
measured.busy.bubble_fraction; the measured-run schema's `busy` is rank 0's, and `trainsim
validate` sets it beside the replay's stage 0 (planner/validate/validation.cpp). This puts each
pipeline row's own stage-0 whole-step bubble (stack.details.streams_per_rank[0].bubble_fraction,
measured in the same run) there, as calibrate/reference/reference_result.cpp now writes it. Text
edit of that one number, every other byte kept; idempotent. Run from the repository root.
"""
import glob
import json
import re

for path in sorted(glob.glob("reports/validation/reference/h200x*/*_mb*.json")):
    if path.endswith(".model.json"):
        continue
    text = open(path).read()
    row = json.loads(text)
    if row["strategy"]["pp"] == 1:
        continue
    # The first "bubble_fraction" of the file is streams_per_rank[0]'s, as the tool printed it.
    stage0 = re.search(r'"bubble_fraction": ([0-9.eE+-]+)', text).group(1)
    assert float(stage0) == row["stack"]["details"]["streams_per_rank"][0]["bubble_fraction"]
    busy = re.compile(r'("busy": \{\s*"bubble_fraction": )([0-9.eE+-]+)')
    assert len(busy.findall(text)) == 1, path
    new = busy.sub(lambda m: m.group(1) + stage0, text)
    assert json.loads(new)["measured"]["busy"]["bubble_fraction"] == float(stage0)
    if new != text:
        open(path, "w").write(new)
        print(f"{path}: {row['measured']['busy']['bubble_fraction']:.4f} (mean of stages) -> {float(stage0):.4f} (stage 0)")
