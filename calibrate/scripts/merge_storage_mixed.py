#!/usr/bin/env python3
"""Adds the mixed read+write storage figure (trainsim-calibrate's storage bench, bench
"storage_mixed": reads and writes in flight together, calibrate/storage_bench.hpp) to a committed
profile's `storage` block as mixed_read_GBps and mixed_write_GBps, appends where they come from to
storage.source, and records the merge in provenance.merged.storage_mixed. Every other byte of the
profile is kept (the profile is edited as text: hwprofiles/h200x2-measured.json is not in
json.dumps layout).

The figure is the record with the highest combined median (read + write moved per second) over
every storage_mixed record of the runs given (stream counts and repeats): a ceiling the simulator
applies while reads and writes overlap, so the highest the device reached is the one that does not
slow the replay below what was measured. Rounded to 4 significant digits.

usage: merge_storage_mixed.py TARGET.json "provenance line" RUN_DIR [RUN_DIR ...]
  python3 calibrate/scripts/merge_storage_mixed.py hwprofiles/h200x2-measured.json \
      "..." reports/calibration/h200x2/storage_mixed/raw/repeat-a \
      reports/calibration/h200x2/storage_mixed/raw/repeat-b
"""
import json
import re
import sys


def sig4(x):
    return float(f"{x:.4g}")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    target, line, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    best = None
    for run in runs:
        recs = [m for m in json.load(open(f"{run}/raw_results.json"))["measurements"] if m["bench"] == "storage_mixed"]
        for c in (m for m in recs if m["what"] == "combined"):
            same = lambda what: next(m for m in recs if m["what"] == what and m["params"] == c["params"])
            cand = (c["stats"]["median"], run, c, same("read"), same("write"))
            if best is None or cand[0] > best[0]:
                best = cand
    if best is None:
        sys.exit(f"no storage_mixed records in {runs}")
    combined, run, c, rd, wr = best
    p = c["params"]
    text = open(target).read()
    json.loads(text)
    m = re.search(r'\n  "storage": \{\n(.*?)\n  \},\n', text, re.S)
    if not m:
        sys.exit(f"{target}: no top-level storage block")
    block = [l for l in m.group(1).split("\n") if '"mixed_read_GBps"' not in l and '"mixed_write_GBps"' not in l]
    at = next(i for i, l in enumerate(block) if l.startswith('    "write_GBps": ')) + 1
    block[at:at] = [f'    "mixed_read_GBps": {sig4(rd["stats"]["median"])},', f'    "mixed_write_GBps": {sig4(wr["stats"]["median"])},']
    src_i = next(i for i, l in enumerate(block) if l.startswith('    "source": '))
    source = json.loads(block[src_i][len('    "source": '):])
    source = source.split(" mixed_read_GBps and mixed_write_GBps:")[0]
    source += (f" mixed_read_GBps and mixed_write_GBps: reads and writes in flight together (trainsim-calibrate's storage "
               f"bench, storage_mixed: {p['streams']} stream(s), each one {p['chunk_bytes'] >> 20} MiB chunk read and one "
               f"written at once in {p['request_bytes'] >> 20} MiB O_DIRECT requests, {p['io']}, fdatasync inside the timing; "
               f"medians of {c['stats']['n']} samples, the best combined rate of the runs merged), {line}")
    block[src_i] = '    "source": ' + json.dumps(source, ensure_ascii=False)
    text = text[:m.start(1)] + "\n".join(block) + text[m.end(1):]
    merged = re.search(r'\n    "merged": \{\n', text)
    if not merged:
        sys.exit(f"{target}: no provenance.merged block")
    text = re.sub(r'\n      "storage_mixed": .*', "", text)
    entry = f'      "storage_mixed": {json.dumps(line, ensure_ascii=False)},\n'
    text = text[:merged.end()] + entry + text[merged.end():]
    json.loads(text)
    open(target, "w").write(text)
    print(f"{target}: mixed_read_GBps {sig4(rd['stats']['median'])}, mixed_write_GBps {sig4(wr['stats']['median'])} "
          f"(combined {combined:.4g}, {p['streams']} stream(s), {run})")


if __name__ == "__main__":
    main()
