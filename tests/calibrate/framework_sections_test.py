#!/usr/bin/env python3
"""The framework driver's sections (calibrate/framework/sections.py) from the committed raw runs equal
what the merge scripts put into the built-in profiles from the same runs (an expectation the driver's
code did not compute), and the driver lists its parts on a CPU and refuses to measure without CUDA in
one line. Run by ctest (framework_sections, label unit) as `python3 THIS ROOT`; needs no torch."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "calibrate"))
from framework.sections import sections  # noqa: E402

RAW = os.path.join(ROOT, "reports", "calibration")
PROVENANCE = {"host": "vm", "date": "2026-11-28T00:00:00Z", "gpu": "NVIDIA H200", "torch": "2.11.0+cu130",
              "cuda": "13.0", "cpu_count": 64}


def load(*path):
    with open(os.path.join(*path)) as f:
        return json.load(f)


def one_part(name, records, **doc):
    return sections({"parts": {name: {"provenance": PROVENANCE, "sizes": 1, "records": records}}, **doc})


H200X2 = load(ROOT, "hwprofiles", "h200x2-measured.json")
H200X4 = load(ROOT, "hwprofiles", "h200x4-measured.json")


class MergedProfiles(unittest.TestCase):
    def test_stacks_are_h200x2_measureds(self):
        # merge_torch_calibration.py, then resplit_pipeline_dispatch.py, from these runs.
        d = os.path.join(RAW, "h200x2", "host_dispatch", "torch")
        out = one_part("torch_stacks", {"launches": [load(d, "torch_stack_dispatch_w1.json"),
                                                     load(d, "torch_stack_dispatch_w2.json")],
                                        "pipeline_actions": load(d, "torch_pipeline_actions.json")})
        mine = out["calibration"]["host_dispatch"]["stacks"]
        merged = H200X2["calibration"]["host_dispatch"]["stacks"]
        self.assertEqual([e["stack"] for e in mine], [e["stack"] for e in merged])
        for a, b in zip(mine, merged):
            for key, value in b.items():
                if key in ("layer_forward_us", "layer_backward_us") and a["stack"].startswith("pytorch-pipelining:"):
                    # The resplit split the sum of the rounded halves and rounded again: 670.7 here,
                    # 670.8 there (1F1B's forward), the last of 4 significant digits.
                    self.assertAlmostEqual(a[key], value, delta=1e-3 * (b["layer_forward_us"] + b["layer_backward_us"]))
                else:
                    self.assertEqual(a[key], value, f"{a['stack']} {key}")

    def test_a_failed_stack_is_left_out_and_said(self):
        d = os.path.join(RAW, "h200x2", "host_dispatch", "torch")
        w1 = load(d, "torch_stack_dispatch_w1.json")
        w2 = load(d, "torch_stack_dispatch_w2.json")
        del w2["stacks"]["fsdp2-zero3"]
        w2["errors"] = {"fsdp2-zero3": "RuntimeError: stand-in"}
        out = one_part("torch_stacks", {"launches": [w1, w2], "pipeline_actions": None})
        names = [e["stack"] for e in out["calibration"]["host_dispatch"]["stacks"]]
        self.assertNotIn("pytorch-fsdp:zero3", names)
        self.assertIn("pytorch-fsdp:zero3: not measured: RuntimeError: stand-in (at 2 ranks)",
                      out["calibration"]["host_dispatch"]["source"])

    def test_offload_is_h200x4_measureds(self):
        # merge_offload_calibration.py from these runs.
        runs = [load(RAW, "offload", "h200x4", f"torch_offload_bench_r{r}.json") for r in (4, 1, 2)]
        mine = one_part("torch_offload", runs)["calibration"]["torch_offload"]
        merged = H200X4["calibration"]["torch_offload"]
        self.assertEqual(mine["curves"], merged["curves"])
        self.assertEqual(mine["adamw"], merged["adamw"])

    def test_gemm_in_step_is_h200x4_measureds_at_its_peak(self):
        # merge_step_gemms.py from these runs (one per GPU) against the profile's bf16 peak.
        runs = [load(RAW, "step-gemms", f"gpu{g}", "torch_step_gemms.json") for g in range(4)]
        peak = H200X4["gpu"]["peak_TFLOPs"]["bf16"]
        mine = one_part("torch_step_gemms", runs, bf16_peak_TFLOPs=peak)["calibration"]["gemm_in_step"]
        self.assertEqual(mine["products"], H200X4["calibration"]["gemm_in_step"]["products"])
        without = one_part("torch_step_gemms", runs)
        self.assertNotIn("gemm_in_step", without["calibration"])
        self.assertTrue(any("bf16 peak" in n for n in without["notes"]))

    def test_a_step_run_whose_configurations_all_failed_writes_no_step_tables(self):
        run = {"configs": [], "errors": [{"config": ["gpt", 1024, 16, 0, 4096, 50304, 1], "error": "OutOfMemoryError: x"}]}
        out = one_part("torch_step_gemms", [run], bf16_peak_TFLOPs=989.4)
        self.assertEqual(out["calibration"], {})
        self.assertTrue(any("OutOfMemoryError: x" in n for n in out["notes"]), out["notes"])
        self.assertTrue(any("no configuration of torch_step_gemms ran" in n for n in out["notes"]), out["notes"])

    def test_attention_and_layer_kernels_are_h200x4_measureds(self):
        # merge_layer_attention.py --step-runs --micro and merge_fsdp_kernels.py --part kernels.
        runs = [load(RAW, "step-attention", f"gpu{g}", "torch_step_gemms.json") for g in range(2)]
        layer = load(RAW, "layer-kernels", "torch_layer_kernels.json")
        out = sections({"parts": {
            "torch_step_gemms": {"provenance": PROVENANCE, "sizes": 1, "records": runs},
            "torch_layer_kernels": {"provenance": PROVENANCE, "sizes": 2,
                                    "records": {"kernels": layer["kernels"], "attention": layer["attention"]}}}})
        self.assertEqual(out["calibration"]["attention"]["kernels"], H200X4["calibration"]["attention"]["kernels"])
        merged = {c["what"]: c for c in H200X4["calibration"]["kernels"]}
        names = [c["what"] for c in out["calibration"]["kernels"]]
        self.assertEqual(names, ["torch_bias_grad_bf16", "torch_add_fp32_bf16", "torch_split_cat_bf16",
                                 "torch_swiglu_split_fwd_bf16", "torch_rotary_split_fwd_bf16"])
        for c in out["calibration"]["kernels"]:
            self.assertEqual(c, merged[c["what"]])


class DriverOnACpu(unittest.TestCase):
    def driver(self, *args):
        env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "calibrate")}
        return subprocess.run([sys.executable, "-m", "framework", *args], capture_output=True, text=True, env=env,
                              cwd=os.path.join(ROOT, "calibrate"))

    def test_parts_lists_every_part_with_its_estimates(self):
        r = self.driver("parts", "--mode", "full")
        self.assertEqual(r.returncode, 0, r.stderr)
        parts = {p["name"]: p for p in json.loads(r.stdout)["parts"]}
        for name in ("torch_stacks", "torch_step_gemms", "torch_layer_kernels", "torch_offload"):
            self.assertIn(name, parts)
            self.assertEqual(len(parts[name]["seconds"]), parts[name]["sizes"])

    def test_run_without_cuda_says_why_in_one_line(self):
        probe = json.loads(self.driver("probe").stdout)
        if probe["available"]:
            self.skipTest("this Python has PyTorch with CUDA")
        r = self.driver("run", "--out", "/nonexistent", "--mode", "quick", "torch_stacks:1")
        self.assertEqual(r.returncode, 3)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("framework parts need PyTorch with CUDA", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
