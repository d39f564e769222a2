"""The JSON document a single-GPU PyTorch probe writes (launch_cost_probe.py, gemm_data_probe.py):
schema_version, kind, provenance (script, command, date, host, GPU, torch and CUDA versions) and the
probe's own keys."""
import json
import os
import sys
import time

import torch


def write_probe_doc(path, kind, script, body):
    """Write {"schema_version": 1, "kind": kind, "provenance": {...}, **body} to `path`."""
    doc = {"schema_version": 1, "kind": kind,
           "provenance": {"script": script, "command": " ".join(sys.argv),
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                          "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda},
           **body}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
