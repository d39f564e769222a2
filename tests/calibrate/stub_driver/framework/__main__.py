"""The framework driver's protocol (calibrate/framework/__main__.py) without torch: probe says
available, parts lists two parts, run writes their raw documents from committed raw runs
(reports/calibration/h200x2/host_dispatch/torch/ and reports/calibration/fsdp-kernels/), and
sections is the real driver's. STUB_DRIVER_HANG=PART makes run hang in that part (after the
parts before it are written), as an interrupted or timed-out run does. STUB_DRIVER_ALL_PARTS=1 lists
four more parts, whose documents hold the committed raw runs that the merge scripts put into the
built-in profiles: torch_stacks (reports/calibration/h200x2/host_dispatch/torch/: both world sizes
and the pipeline actions), torch_step_gemms (reports/calibration/step-attention/, both GPUs),
torch_layer_kernels (reports/calibration/layer-kernels/) and torch_offload
(reports/calibration/offload/h200x4/, 1, 2 and 4 ranks)."""
import importlib.util
import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# The real merge logic, its package loaded by path under another name (this package has the real
# one's name); its modules import each other relatively.
_dir = os.path.join(ROOT, "calibrate", "framework")
_spec = importlib.util.spec_from_file_location("real_framework", os.path.join(_dir, "__init__.py"),
                                               submodule_search_locations=[_dir])
sys.modules["real_framework"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sys.modules["real_framework"])
sections = importlib.import_module("real_framework.sections").sections

RAW = {"torch_host": ("reports/calibration/h200x2/host_dispatch/torch/torch_microbench.json", "host"),
       "torch_fsdp_kernels": ("reports/calibration/fsdp-kernels/torch_microbench.json", "fsdp_kernels")}


def load(path):
    return json.load(open(os.path.join(ROOT, path)))


def extra_part(name):
    """(provenance, seconds, records) of a part of STUB_DRIVER_ALL_PARTS from its committed raw runs."""
    if name == "torch_stacks":
        d = "reports/calibration/h200x2/host_dispatch/torch/"
        w1 = load(d + "torch_stack_dispatch_w1.json")
        return w1["provenance"], 15.3, {"launches": [w1, load(d + "torch_stack_dispatch_w2.json")],
                                        "pipeline_actions": load(d + "torch_pipeline_actions.json")}
    if name == "torch_step_gemms":
        runs = [load(f"reports/calibration/step-attention/gpu{g}/torch_step_gemms.json") for g in range(2)]
        return runs[0]["provenance"], 30.8, runs
    if name == "torch_layer_kernels":
        raw = load("reports/calibration/layer-kernels/torch_layer_kernels.json")
        return raw["provenance"], raw["seconds"]["kernels"] + raw["seconds"]["attention"], \
            {"kernels": raw["kernels"], "attention": raw["attention"]}
    runs = [load(f"reports/calibration/offload/h200x4/torch_offload_bench_r{r}.json") for r in (1, 2, 4)]
    return runs[0]["provenance"], sum(runs[0]["seconds"].values()), runs


EXTRA = [{"name": "torch_stacks", "what": "stub", "sizes": 5, "needs_gpu": True, "seconds": [5.5, 12.0, 13.1, 14.2, 15.3]},
         {"name": "torch_step_gemms", "what": "stub", "sizes": 1, "needs_gpu": True, "seconds": [5.5]},
         {"name": "torch_layer_kernels", "what": "stub", "sizes": 2, "needs_gpu": True, "seconds": [4.0, 5.2]},
         {"name": "torch_offload", "what": "stub", "sizes": 1, "needs_gpu": True, "seconds": [32.5]}]


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def main(argv):
    cmd = argv[0]
    if cmd == "probe":
        print(json.dumps({"available": True, "why_not": "", "torch": "stub", "cuda": "stub", "gpu": "stub GPU"}))
    elif cmd == "parts":
        parts = [{"name": "torch_host", "what": "stub", "sizes": 1, "needs_gpu": True, "seconds": [2.0]},
                 {"name": "torch_fsdp_kernels", "what": "stub", "sizes": 3, "needs_gpu": True, "seconds": [1.0, 2.0, 8.0]}]
        if os.environ.get("STUB_DRIVER_ALL_PARTS") == "1":
            parts += EXTRA
        print(json.dumps({"startup_seconds": 1.0, "parts": parts}))
    elif cmd == "run":
        out = argv[argv.index("--out") + 1]
        for sel in argv[argv.index("--mode") + 2:]:
            name, sizes = sel.split(":")
            if os.environ.get("STUB_DRIVER_HANG") == name:
                emit("progress", part=name, done=0, of=int(sizes))
                time.sleep(3600)
            emit("progress", part=name, done=0, of=int(sizes))
            if name in RAW:
                path, key = RAW[name]
                src = json.load(open(os.path.join(ROOT, path)))
                prov, seconds, records = src["provenance"], src["seconds"][key], src[key]
            else:
                prov, seconds, records = extra_part(name)
            doc = {"schema_version": 1, "kind": "trainsim.framework_part", "part": name, "sizes": int(sizes),
                   "provenance": {**prov, "cuda": "13.0", "cpu_count": prov.get("cpu_count", 64)}, "seconds": seconds,
                   "records": records}
            tmp = os.path.join(out, "." + name + ".json.partial")
            json.dump(doc, open(tmp, "w"), indent=1)
            os.replace(tmp, os.path.join(out, name + ".json"))
            emit("part_done", part=name, seconds=doc["seconds"])
    elif cmd == "sections":
        print(json.dumps(sections(json.load(sys.stdin))))
    return 0


sys.exit(main(sys.argv[1:]))
