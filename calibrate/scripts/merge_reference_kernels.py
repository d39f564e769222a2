#!/usr/bin/env python3
"""Puts calibration.reference_kernels of a trainsim-calibrate run (--only reference_kernels) into a
committed profile, every other byte of the profile as it was (the committed profiles mix compact
and indented forms), the source extended with where and when it was measured.

    python3 calibrate/scripts/merge_reference_kernels.py RUN/profile.json TARGET.json "measured on ..."
"""
import json
import sys

from merge_offload_calibration import insert_section

KEY = "reference_kernels"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    run, target, where = sys.argv[1:]
    section = json.load(open(run))["calibration"].get(KEY)
    if not section or not section.get("curves"):
        sys.exit(f"{run}: no calibration.{KEY}.curves")
    section = dict(section)
    section["source"] = f"{section['source']}; {where}; merged by calibrate/scripts/merge_reference_kernels.py"
    text = open(target).read()
    out = insert_section(text, section, KEY)
    expected = json.loads(text)
    expected["calibration"][KEY] = section
    if json.loads(out) != expected:
        sys.exit(f"{target}: the spliced text does not parse back to the merged profile")
    open(target, "w").write(out)


if __name__ == "__main__":
    main()
