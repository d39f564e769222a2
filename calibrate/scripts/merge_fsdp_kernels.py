#!/usr/bin/env python3
"""Adds kernel curves measured with PyTorch to profiles' calibration.kernels: FSDP2's own kernels
(torch_microbench.py --parts fsdp_kernels) or a layer's kernels in its layouts (torch_layer_kernels.py,
--part kernels, with --only naming the kernels to take).

    python3 calibrate/scripts/merge_fsdp_kernels.py --micro reports/calibration/fsdp-kernels/torch_microbench.json \
        --note "..." hwprofiles/h200x4-measured.json reports/validation/measured/*/host.profile.json
    python3 calibrate/scripts/merge_fsdp_kernels.py --micro reports/calibration/layer-kernels/torch_layer_kernels.json \
        --part kernels --only bias_grad_bf16 add_fp32_bf16 --note "..." PROFILE...

One curve per kernel, "torch_<name>" (bytes -> GB/s): its points are the measured units' byte
counts, ascending; where two measurements share a byte count (the copy-out and chunk_cat move the
unsharded unit, the same bytes at 2 and 4 ranks) their mean. Rounded to 4 significant digits.
A curve of the same name is replaced. The profiles are edited as text (the curves appended to the
first "kernels" array of "calibration", the note to provenance's "notes"), so the rest of each file
stays byte for byte as it was; each is parsed again afterwards to check it.
"""
import argparse
import json
import os
import sys

from merge_offload_calibration import close_of  # the bracket closing an array or object, strings skipped

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from framework.sections import kernel_curves  # noqa: E402


def curves(micro, part="fsdp_kernels", only=None):
    try:
        return kernel_curves(micro[part], only)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def entry_text(curve, indent):
    pad = " " * indent
    lines = [pad + "{", pad + f'  "what": {json.dumps(curve["what"])},', pad + '  "points": [']
    for i, p in enumerate(curve["points"]):
        comma = "," if i + 1 < len(curve["points"]) else ""
        lines += [pad + "    {", pad + f'      "bytes": {json.dumps(p["bytes"])},', pad + f'      "GBps": {json.dumps(p["GBps"])}',
                  pad + "    }" + comma]
    lines += [pad + "  ]", pad + "}"]
    return "\n".join(lines)


def merge(path, new, note):
    text = open(path).read()
    doc = json.loads(text)
    names = {c["what"] for c in new}
    kept = [k for k in doc["calibration"]["kernels"] if k["what"] not in names]
    if len(kept) != len(doc["calibration"]["kernels"]):
        raise SystemExit(f"{path}: already has some of {sorted(names)}; remove them first")
    cal = text.index('"calibration": {')
    open_at = text.index('"kernels": [', cal) + len('"kernels": ')
    close_at = close_of(text, open_at)
    line_start = text.rfind("\n", 0, close_at) + 1
    indent = close_at - line_start + 2
    body = text[:close_at].rstrip()
    text = body + ",\n" + ",\n".join(entry_text(c, indent) for c in new) + "\n" + text[line_start:]
    prov = text.index('"provenance": {')
    notes_open = text.index('"notes": [', prov) + len('"notes": ')
    notes_close = close_of(text, notes_open)
    nl = text.rfind("\n", 0, notes_close) + 1
    item_indent = notes_close - nl + 2
    text = text[:notes_close].rstrip() + ",\n" + " " * item_indent + json.dumps(note) + "\n" + text[nl:]
    check = json.loads(text)
    assert [k["what"] for k in check["calibration"]["kernels"]][-len(new):] == [c["what"] for c in new]
    open(path, "w").write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--micro", required=True)
    ap.add_argument("--note", required=True)
    ap.add_argument("--part", default="fsdp_kernels", help="the list of measurements in --micro (default fsdp_kernels)")
    ap.add_argument("--only", nargs="+", help="take these kernels only (default: every kernel of the part)")
    ap.add_argument("profiles", nargs="+")
    args = ap.parse_args()
    new = curves(json.load(open(args.micro)), args.part, set(args.only) if args.only else None)
    if args.only and {c["what"] for c in new} != {"torch_" + n for n in args.only}:
        raise SystemExit(f"--only names kernels {args.micro} does not have: {sorted(args.only)}")
    for p in args.profiles:
        merge(p, new, args.note)
        print(f"{p}: + {', '.join(c['what'] for c in new)}")


if __name__ == "__main__":
    main()
