"""The framework driver's protocol (calibrate/framework/__main__.py) without torch: probe says
available, parts lists two parts, run writes their raw documents from committed raw runs
(reports/calibration/h200x2/host_dispatch/torch/ and reports/calibration/fsdp-kernels/), and
sections is the real driver's. STUB_DRIVER_HANG=PART makes run hang in that part (after the
parts before it are written), as an interrupted or timed-out run does."""
import importlib.util
import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# The real merge logic, loaded by path (this package has the real one's name).
_spec = importlib.util.spec_from_file_location("real_sections", os.path.join(ROOT, "calibrate", "framework", "sections.py"))
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)
sections = _real.sections

RAW = {"torch_host": ("reports/calibration/h200x2/host_dispatch/torch/torch_microbench.json", "host"),
       "torch_fsdp_kernels": ("reports/calibration/fsdp-kernels/torch_microbench.json", "fsdp_kernels")}


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def main(argv):
    cmd = argv[0]
    if cmd == "probe":
        print(json.dumps({"available": True, "why_not": "", "torch": "stub", "cuda": "stub", "gpu": "stub GPU"}))
    elif cmd == "parts":
        print(json.dumps({"startup_seconds": 1.0, "parts": [
            {"name": "torch_host", "what": "stub", "sizes": 1, "needs_gpu": True, "seconds": [2.0]},
            {"name": "torch_fsdp_kernels", "what": "stub", "sizes": 3, "needs_gpu": True, "seconds": [1.0, 2.0, 8.0]}]}))
    elif cmd == "run":
        out = argv[argv.index("--out") + 1]
        for sel in argv[argv.index("--mode") + 2:]:
            name, sizes = sel.split(":")
            if os.environ.get("STUB_DRIVER_HANG") == name:
                emit("progress", part=name, done=0, of=int(sizes))
                time.sleep(3600)
            path, key = RAW[name]
            src = json.load(open(os.path.join(ROOT, path)))
            emit("progress", part=name, done=0, of=int(sizes))
            doc = {"schema_version": 1, "kind": "trainsim.framework_part", "part": name, "sizes": int(sizes),
                   "provenance": {**src["provenance"], "cuda": "13.0"}, "seconds": src["seconds"][key],
                   "records": src[key]}
            tmp = os.path.join(out, "." + name + ".json.partial")
            json.dump(doc, open(tmp, "w"), indent=1)
            os.replace(tmp, os.path.join(out, name + ".json"))
            emit("part_done", part=name, seconds=doc["seconds"])
    elif cmd == "sections":
        print(json.dumps(sections(json.load(sys.stdin))))
    return 0


sys.exit(main(sys.argv[1:]))
