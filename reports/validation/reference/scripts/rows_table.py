#!/usr/bin/env python3
"""The README's rows table from the committed measured runs: median step and spread, the step of
the rows it replaced (git revision given), model TFLOP/s per GPU (Narayanan et al. 2021 eq. 3
without recomputation: 72 B s L h^2 (1 + s / 6h + V / 12 L h) over the median step and the GPUs),
peak allocated per rank, whole-step bubble (stage 0, as measured.busy holds it, and the mean of the stages), stage-span bubble and exposed collective time.

usage (repository root): rows_table.py OLD_REVISION
"""
import glob
import json
import subprocess
import sys

DIR = "reports/validation/reference"


def main():
    old_rev = sys.argv[1]
    print("| row | GPUs | step s (median, spread) | before | model TFLOP/s per GPU | peak allocated GiB per rank | bubble (whole step: stage 0, mean of stages) | stage-span bubble | exposed collective s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(f"{DIR}/h200x*/*_mb*.json")):
        if path.endswith(".model.json"):
            continue
        r = json.load(open(path))
        m = json.load(open(path.replace(".json", ".model.json")))["architecture"]
        old = json.loads(subprocess.run(["git", "show", f"{old_rev}:{path}"], capture_output=True, text=True, check=True).stdout)
        st, meas = r["strategy"], r["measured"]
        B, s, L, h, V = st["global_batch"], st["seq"], m["layers"], m["hidden"], m["vocab"]
        flops = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))
        tflops = flops / meas["step_time_s"] / st["gpus"] / 1e12
        peaks = " / ".join(f"{b / 2**30:.2f}" for b in meas["peak_allocated_bytes"])
        streams = r["stack"]["details"]["streams_per_rank"]
        bubble = span = exposed = "-"
        if st["pp"] > 1:
            bubble = f"{streams[0]['bubble_fraction']:.3f}, {sum(x['bubble_fraction'] for x in streams) / len(streams):.3f}"
            span = " / ".join(f"{x['schedule_bubble_fraction']:.3f}" for x in streams)
        elif st["gpus"] > 1:
            exposed = f"{meas.get('busy', {}).get('exposed_communication_s', 0):.4f}"
        print(f"| {r['name']} | {r['provenance']['gpus']} x H200 | {meas['step_time_s']:.4f} ({meas['step_time_spread']:.3f}) | "
              f"{old['measured']['step_time_s']:.4f} | {tflops:.1f} | {peaks} | {bubble} | {span} | {exposed} |")


if __name__ == "__main__":
    main()
