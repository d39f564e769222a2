"""The framework driver's commands, as trainsim-calibrate starts them (calibrate/framework_driver.cpp):

  probe                  one JSON line: {"available": true|false, "why_not", "torch", "cuda", "gpu"}
  parts --mode M         the parts, their sizes at mode M and estimated seconds (catalog.describe)
  run --out DIR --mode M NAME:SIZES ...
                         measures the named parts in order on GPU 0, each with its first SIZES sizes;
                         writes DIR/NAME.json when a part is done (a temporary renamed into place, so
                         an interrupted run leaves each finished part whole and no other file) and
                         prints one JSON line per event: {"event": "progress", "part", "done", "of"},
                         {"event": "part_done", "part", "seconds"}, {"event": "part_failed", "part",
                         "error"}. Exit 0, or 1 when a part failed (the others are kept); 3, with
                         one line saying why, where PyTorch with CUDA is not there (as
                         trainsim-calibrate's "no GPU").
  sections               reads {"parts": {name: raw document}} on stdin, prints the profile sections
                         (sections.sections); exit 2 naming what is missing when a document is not
                         one this driver writes.

probe, parts and sections need no torch.
"""
import argparse
import importlib
import json
import os
import sys
import time

from . import catalog
from .sections import sections

SCHEMA_VERSION = 1


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def probe():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any failure to import is "not available", said why
        return {"available": False, "why_not": f"PyTorch is not importable ({type(e).__name__}: {e})"}
    info = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        why = "it was built without CUDA" if torch.version.cuda is None else "it sees no CUDA device"
        return {"available": False, "why_not": f"PyTorch {torch.__version__} is importable but {why}", **info}
    return {"available": True, "why_not": "", "gpu": torch.cuda.get_device_name(0), **info}


def write_atomically(path, doc):
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".partial")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def parse_selection(items):
    chosen = []
    for item in items:
        name, _, count = item.partition(":")
        try:
            part = catalog.by_name(name)
        except KeyError:
            raise SystemExit(f"framework driver: unknown part {name!r} (parts: {', '.join(p.name for p in catalog.PARTS)})")
        if not count.isdigit() or not 1 <= int(count) <= part.full_sizes:
            raise SystemExit(f"framework driver: {name}: sizes must be 1 to {part.full_sizes}, got {count!r}")
        chosen.append((part, int(count)))
    return chosen


def run(out_dir, chosen):
    import torch
    from .timing import provenance
    for leftover in os.listdir(out_dir):  # temporaries of an interrupted run
        if leftover.startswith(".") and leftover.endswith(".json.partial"):
            os.unlink(os.path.join(out_dir, leftover))
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    failed = 0
    for part, sizes in chosen:
        t0 = time.time()
        try:
            fn = getattr(importlib.import_module(f"framework.{part.module}"), part.function)
            records = fn(dev, sizes, lambda done, total, name=part.name: emit("progress", part=name, done=done, of=total))
        except Exception as e:  # noqa: BLE001 - keep the other parts; the C++ tool reports it
            emit("part_failed", part=part.name, error=f"{type(e).__name__}: {e}")
            failed += 1
            torch.cuda.empty_cache()
            continue
        seconds = time.time() - t0
        doc = {"schema_version": SCHEMA_VERSION, "kind": "trainsim.framework_part", "part": part.name, "sizes": sizes,
               "provenance": provenance(f"calibrate/framework/{part.module}.py {part.function}", dev,
                                        cpu_count=os.cpu_count()),
               "seconds": seconds, "records": records}
        write_atomically(os.path.join(out_dir, part.name + ".json"), doc)
        emit("part_done", part=part.name, seconds=seconds)
        torch.cuda.empty_cache()
    return 1 if failed else 0


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m framework", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("probe")
    p = sub.add_parser("parts")
    p.add_argument("--mode", choices=["quick", "full"], required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--mode", choices=["quick", "full"], required=True)
    r.add_argument("selection", nargs="+", metavar="NAME:SIZES")
    sub.add_parser("sections")
    a = ap.parse_args(argv)
    if a.command == "probe":
        print(json.dumps(probe()), flush=True)
        return 0
    if a.command == "parts":
        print(json.dumps(catalog.describe(a.mode)), flush=True)
        return 0
    if a.command == "run":
        chosen = parse_selection(a.selection)
        found = probe()
        if not found["available"]:
            print(f"framework driver: run: {found['why_not']}; the framework parts need PyTorch with CUDA",
                  file=sys.stderr)
            return 3
        return run(a.out, chosen)
    try:
        doc = json.load(sys.stdin)
        print(json.dumps(sections(doc)), flush=True)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        print(f"framework driver: sections: the framework raw results are not ones this driver writes: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


sys.exit(main(sys.argv[1:]))
