"""Shared set-up of the capture tests: the package on sys.path, a skip where torch is missing, and
a tiny check/report helper. Each test file is a script: exit 0 (passed, or SKIPPED), 1 (failed)."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PKG = os.path.join(ROOT, "workloads", "capture")
sys.path.insert(0, PKG)


def require_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"SKIPPED: torch is not installed for {sys.executable} (the capture needs PyTorch)")
        sys.exit(0)


class Checks:
    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0

    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f": {detail}" if detail else ""))
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, what, f"got {got!r}, want {want!r}")

    def done(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


def run_cli(args, env=None, cwd=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = PKG + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "trainsim_capture"] + list(args), capture_output=True, text=True,
                          env=e, cwd=cwd or ROOT)


def capture_module(factory, dims, layers, b, s, symbolic=True, **run_kw):
    from trainsim_capture.models import ModuleSource
    from trainsim_capture.step import RunSpec
    from trainsim_capture.capture import capture
    run_kw.setdefault("device", "cpu")
    return capture(ModuleSource(factory, dims, layers), RunSpec(b, s, **run_kw), symbolic=symbolic)
