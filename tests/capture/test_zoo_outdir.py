#!/usr/bin/env python3
"""The zoos' OUTDIR: a folder that cannot be made or written exits 2 naming it, before any capture
runs (no traceback, no summary.json)."""
import os
import subprocess
import sys
import tempfile

import _common

c = _common.Checks("test_zoo_outdir")
env = dict(os.environ, PYTHONPATH=_common.PKG + os.pathsep + os.environ.get("PYTHONPATH", ""))
with tempfile.TemporaryDirectory() as tmp:
    a_file = os.path.join(tmp, "a_file")
    with open(a_file, "w") as f:
        f.write("x")
    for zoo in ("hf_zoo", "ours_zoo"):
        for outdir, what in ((os.path.join(a_file, "sub"), "a folder under a file"), (a_file, "a file"),
                             ("/dev/null", "a device")):
            r = subprocess.run([sys.executable, "-m", f"trainsim_capture.{zoo}", outdir, "--jobs", "1"],
                               capture_output=True, text=True, env=env, cwd=_common.ROOT, timeout=120)
            c.eq(r.returncode, 2, f"{zoo}, {what}: exit 2")
            c.check(outdir in r.stderr and "expected a writable folder" in r.stderr and "Traceback" not in r.stderr,
                    f"{zoo}, {what}: the message names the folder, no traceback", r.stderr[-400:])
    c.eq(os.listdir(tmp), ["a_file"], "nothing written beside the file")
c.done()
