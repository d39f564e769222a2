#!/usr/bin/env python3
"""The capture's -o: a regular file or a new name is written whole (through a temporary file
renamed over it); a symbolic link there is replaced, its target left alone; a directory, a device
or a missing folder exits 2 naming the path, and nothing is left behind beside it."""
import os
import tempfile

import _common

_common.require_torch()
c = _common.Checks("test_output_path")
ARGS = ["--module", "trainsim_capture.examples:tiny_mlp", "--layers", "2", "--dims", "h=8,f=16,V=9", "--device", "cpu",
        "--optimizer", "adamw-forloop", "-q"]
with tempfile.TemporaryDirectory() as tmp:
    target = os.path.join(tmp, "target")
    with open(target, "w") as f:
        f.write("keep")
    link = os.path.join(tmp, "link.json")
    os.symlink(target, link)
    r = _common.run_cli(ARGS + ["-o", link])
    c.eq(r.returncode, 0, "a link to a regular file: written")
    c.check(not os.path.islink(link) and os.path.getsize(link) > 0, "the link is replaced by the capture")
    c.eq(open(target).read(), "keep", "the link's target is left alone")
    for path, what, words in ((tmp, "a directory", "a directory"), ("/dev/null", "a device", "a device"),
                              (os.path.join(tmp, "absent", "x.json"), "a missing folder", "No such file")):
        r = _common.run_cli(ARGS + ["-o", path])
        c.eq(r.returncode, 2, f"{what}: exit 2")
        c.check(path in r.stderr and words in r.stderr, f"{what}: the message names the path and why", r.stderr[-300:])
    c.check(not [n for n in os.listdir(tmp) if ".tmp-" in n], "no temporary file left behind", str(os.listdir(tmp)))
    c.eq(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"), True, "/dev/null is still a device")
c.done()
