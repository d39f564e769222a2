#!/usr/bin/env python3
"""Validation call 31: does the replay, costed on a host's own dispatch calibration, reproduce
run_step.py's 4-stage 1F1B steps (16 micro-batches of the row's shape) of the tiny GPT and of the
real GPT on that host? (reports/validation/README.md, row "31", has the rule, written before the
call.)

    python3 reports/validation/composition_probe/analyze.py      (needs build/trainsim)

The profile: h200x4-measured with this host's PyTorch dispatch calibration (hd4_1/, 4 ranks,
pipe-gpipe and pipe-1f1b at 2 and 6 layers a stage, 8 and 16 micro-batches) swapped in by
calibrate/scripts/host_swap_profile.py, as the committed rows' profiles are built; its GPU side stays
the H200's (the runs had H100s; the tiny GPT hardly uses its GPU).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
TOLERANCE = 0.10  # the rule's


def main():
    with tempfile.TemporaryDirectory() as scratch:
        prof = os.path.join(scratch, "call31.profile.json")
        subprocess.run([sys.executable, "calibrate/scripts/host_swap_profile.py", "--base", "h200x4-measured", "--name", "h100x4-call31",
                        "--description", "validation call 31's host dispatch", "--stacks",
                        os.path.join(HERE, "hd4_1", "torch_stack_dispatch_w4.json"),
                        "--micro", "reports/calibration/h200x4-call6/hd/torch_microbench.json", "--out", prof],
                       check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        print("| GPT | measured step (ms) | replay (ms) | error | measured bubble | replay's bubble |")
        print("|---|---|---|---|---|---|")
        errors = {}
        for size in ("tiny", "real"):
            run = os.path.join(HERE, "faults4_2", f"{size}_1f1b", f"probe_{size}_1f1b.json")
            out = subprocess.run([os.path.join(ROOT, "build", "trainsim"), "validate", "--measured", run, "--hw", prof, "--no-trace",
                                  "--format", "json"], check=True, capture_output=True, text=True).stdout
            rows = {r["metric"]: r for r in json.loads(out)["rows"]}
            step, bubble = rows["step_time"], rows["bubble_fraction"]
            errors[size] = step["error_pct"] / 100
            print(f"| {size} | {1e3 * step['measured']:.1f} | {1e3 * step['predicted']:.1f} | {step['error_pct']:+.1f}% | "
                  f"{bubble['measured']:.3f} | {bubble['predicted']:.3f} |")
    if errors["tiny"] < -TOLERANCE:
        verdict = "composition named"
    elif errors["real"] < -TOLERANCE:
        verdict = "real-versus-tiny named"
    elif abs(errors["tiny"]) <= TOLERANCE and abs(errors["real"]) <= TOLERANCE:
        verdict = "neither"
    else:
        verdict = "outside the rule's cases (a replay above its run by more than 10%)"
    print(f"\n{verdict} (rule: the tiny GPT's replay more than 10% below its step names the composition; else the real "
          "GPT's more than 10% below names real versus tiny; both within 10%: neither)")


if __name__ == "__main__":
    main()
