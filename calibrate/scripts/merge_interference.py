#!/usr/bin/env python3
"""Puts the calibration.interference table of a trainsim-calibrate run's profile.json into a
committed profile, leaving every other byte of that profile as it was (the rest stays as measured
before), and records where the table came from in provenance.merged.interference.

usage: merge_interference.py RUN/profile.json TARGET.json "provenance line"
"""
import json
import sys


def compact_points(points, indent):
    pad = " " * indent
    return (",\n").join(pad + json.dumps(p, separators=(",", ":")) for p in points)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: merge_interference.py RUN/profile.json TARGET.json 'provenance line'")
    run, target, line = sys.argv[1:]
    table = json.load(open(run))["calibration"].get("interference")
    if not table or not table.get("points"):
        sys.exit(f"{run}: no calibration.interference.points")
    text = open(target).read()
    profile = json.loads(text)
    if text == json.dumps(profile, indent=2, ensure_ascii=False) + "\n":
        # Written by json.dumps(indent=2): written back the same way.
        profile["calibration"]["interference"] = table
        profile["provenance"].setdefault("merged", {})["interference"] = line
        out = json.dumps(profile, indent=2, ensure_ascii=False) + "\n"
    else:
        # trainsim-calibrate's layout (one calibration entry per line): spliced as text.
        cal = profile["calibration"]
        if "interference" in cal:
            sys.exit(f"{target}: splicing over an existing table in this layout is not supported")
        last_key = list(cal.keys())[-1]
        anchor = f'    "{last_key}": {json.dumps(cal[last_key])}\n  }},'
        if text.count(anchor) != 1:
            sys.exit(f"{target}: calibration's last entry not found once")
        block = (f'    "{last_key}": {json.dumps(cal[last_key])},\n    "interference": {{\n      "points": [\n'
                 + compact_points(table["points"], 8) + "\n      ],\n"
                 + f'      "source": {json.dumps(table["source"], ensure_ascii=False)}\n    }}\n  }},')
        text = text.replace(anchor, block)
        prov_anchor = '    "kind": "measured",\n'
        if text.count(prov_anchor) != 1 or '"merged"' in text:
            sys.exit(f"{target}: provenance.kind not found once, or a merged block exists")
        text = text.replace(prov_anchor, prov_anchor + '    "merged": {\n      "interference": '
                            + json.dumps(line, ensure_ascii=False) + "\n    },\n")
        out = text
    check = json.loads(out)
    assert check["calibration"]["interference"] == table
    open(target, "w").write(out)


if __name__ == "__main__":
    main()
