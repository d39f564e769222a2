#!/usr/bin/env python3
"""Puts the storage tier that a trainsim-calibrate run measured (`--only storage`: its
raw_results.json for the device, summary.json for the headline read and write rates) into a
committed profile's `storage` block, leaving every other byte of that profile as it was, and
records where it came from in provenance.merged.storage. For a profile whose storage was copied
from its base (a datasheet) instead of measured on the machine the profile describes.

usage: merge_storage.py RUN_DIR TARGET.json "provenance line"
"""
import json
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: merge_storage.py RUN_DIR TARGET.json 'provenance line'")
    run, target, line = sys.argv[1:]
    raw = json.load(open(f"{run}/raw_results.json"))
    summary = json.load(open(f"{run}/summary.json"))
    dev = raw["provenance"]["storage"]
    read, write = summary["storage_read_GBps"], summary["storage_write_GBps"]
    if not read or not write:
        sys.exit(f"{run}: no storage_read_GBps / storage_write_GBps in summary.json")
    spread = summary["spread"]
    text = open(target).read()
    profile = json.loads(text)
    if text != json.dumps(profile, indent=2, ensure_ascii=False) + "\n":
        sys.exit(f"{target}: not in json.dumps(indent=2) layout")
    profile["storage"] = {
        "kind": dev["kind"],
        "count": 1,
        "capacity_TB": round(dev["capacity_TB"], 3),
        "read_GBps": round(read, 3),
        "write_GBps": round(write, 3),
        "source": (
            f"read_GBps and write_GBps measured by trainsim-calibrate --only storage on the machine this profile "
            f"describes: O_DIRECT sequential, best of the sweep re-measured (read: {spread['storage_read_GBps']['where'].split(': ')[-1]}; "
            f"write: {spread['storage_write_GBps']['where'].split(': ')[-1]}; medians of {spread['storage_read_GBps']['n']} samples) on "
            f"the {dev['filesystem']} filesystem of /dev/{dev['device']}; kind detected from /sys/block; count 1 and "
            f"capacity_TB (that filesystem's size) describe only that device"
        ),
    }
    profile["provenance"].setdefault("merged", {})["storage"] = line
    open(target, "w").write(json.dumps(profile, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
