"""Capture trainsim's own validation scripts' models (reports/validation/scripts/model.py's GPT and
model_llama.py's Llama, trainsim_capture.ours) at one small size each, in the variants the committed
Hugging Face captures have: the layer `--stack pytorch*` costs for a model of their structure
(workloads/committed_captures.hpp, committed_capture_of_scripts). For the GPU machines: the captures
record what their PyTorch dispatches for a CUDA device (no GPU work is done).

    PYTHONPATH=workloads/capture python3 -m trainsim_capture.ours_zoo OUTDIR [--jobs 8]

Writes OUTDIR/<gpt|llama>.<variant>.json and OUTDIR/summary.json; exit 0 when every capture
succeeded, 1 otherwise. The scripts run SDPA under sdpa_kernel(FLASH_ATTENTION) and fused AdamW, so
the captures use the flash stand-in and the fused optimizer."""
import argparse
import os
import sys

from .hf_zoo import VARIANTS, capture_env, checked_variants, run_captures, writable_outdir

# factory and its symbols (ours.py): 4 heads of 16 (GPT, FFN 256, 64 positions); Llama with 2
# key/value heads of 2 queries each, FFN 176; vocabulary 512. Micro-batch 2 and sequence 64 keep
# b and s symbols apart from the widths.
MODELS = {
    "gpt": ("gpt", "a=4,d=16,f=256,V=512,P=64"),
    "llama": ("llama", "kv=2,g=2,d=16,f=176,V=512"),
}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m trainsim_capture.ours_zoo", description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    p.add_argument("--device", default="auto", help="the device the fake tensors claim (trainsim_capture --device)")
    p.add_argument("--optimizer", default="adamw-fused")
    p.add_argument("--timeout", type=int, default=300, help="seconds per capture")
    args = p.parse_args(argv)
    variants = checked_variants(p, args.variants)
    writable_outdir(p, args.outdir)
    env = capture_env()
    jobs = []
    for name, (factory, dims) in MODELS.items():
        for v in variants:
            out = os.path.join(args.outdir, f"{name}.{v}.json")
            jobs.append((f"{name}.{v}", [sys.executable, "-m", "trainsim_capture", "--module", f"trainsim_capture.ours:{factory}",
                                         "--dims", dims, "--layers", "4", "--micro-batch", "2", "--seq", "64",
                                         "--optimizer", args.optimizer, "--device", args.device, "--sdpa", "flash", "-q",
                                         "-o", out] + VARIANTS[v]))
    return run_captures(jobs, args.outdir, args.jobs, args.timeout, env)


if __name__ == "__main__":
    sys.exit(main())
