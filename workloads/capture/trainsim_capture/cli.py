"""Command line (README.md, "Usage"). Exit status: 0 done; 2 bad input, a refused model (MoE,
encoder-decoder) or a capture that cannot be expressed (message names the file and key); 3 the
model failed while running under fake tensors (the message says where); 1 anything else."""
import argparse
import os
import sys
import time
import traceback

EXIT_INPUT = 2
EXIT_MODEL = 3


def parser():
    p = argparse.ArgumentParser(prog="python3 -m trainsim_capture",
                                description="Record one training step's ATen ops without a GPU (fake tensors) "
                                            "as a trainsim.capture JSON document.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--hf-config", metavar="FILE", help="a Hugging Face config.json of a decoder-only causal LM")
    src.add_argument("--module", metavar="PKG.MOD:FACTORY",
                     help="factory(layers=N, **symbols) returning your nn.Module (README.md, 'Your own model')")
    src.add_argument("--check", metavar="CAPTURE", help="validate a capture document against SCHEMA.md and exit")
    src.add_argument("--scale", metavar="CAPTURE", help="scale a capture to other symbol values (--set)")
    p.add_argument("--dims", metavar="k=v,...", help="--module: the model's symbols (h, a, kv, d, f, V, P, ...)")
    p.add_argument("--set", metavar="k=v,...", help="--scale: new symbol values (b, s, h, ..., L)")
    p.add_argument("--layers", type=int, help="layers of the full model (--module: required; --hf-config: "
                                              "default num_hidden_layers)")
    p.add_argument("--layers-attr", help="--module: attribute path of the nn.ModuleList of layers (default: found)")
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--precision", default="autocast-bf16", choices=("fp32", "bf16", "autocast-bf16", "fp16-scaler"))
    p.add_argument("--recompute", action="store_true", help="non-reentrant activation checkpointing of each layer")
    p.add_argument("--optimizer", default=None,
                   choices=("adamw-fused", "adamw-foreach", "adamw-forloop", "none"),
                   help="default: adamw-fused (PyTorch >= 2.0; adamw-foreach before)")
    p.add_argument("--optimizer-device", default="gpu", choices=("gpu", "cpu"),
                   help="cpu: the optimizer steps fp32 host copies (CPU offload)")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="the device fake tensors claim (auto: cuda where this PyTorch has CUDA)")
    p.add_argument("--sdpa", default="auto", choices=("auto", "flash", "efficient", "math"),
                   help="SDPA backend stand-in (SCHEMA.md, 'Stand-ins')")
    p.add_argument("--no-symbols", action="store_true", help="skip the generic-size captures (not scalable)")
    p.add_argument("--time", action="store_true",
                   help="also run the step on the GPU and add measured_us per op (UNTESTED; needs CUDA)")
    p.add_argument("--time-warmup", type=int, default=2)
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def _err(msg, code):
    print(f"trainsim_capture: error: {msg}", file=sys.stderr)
    return code


def main(argv=None):
    args = parser().parse_args(argv)
    from .errors import CaptureError
    try:
        return _main(args)
    except CaptureError as e:
        return _err(str(e), EXIT_INPUT)


def _main(args):
    from . import jsonio
    from .errors import CaptureError
    say = (lambda *a: None) if args.quiet else (lambda *a: print("trainsim_capture:", *a, file=sys.stderr))

    if args.check:
        return _check(args.check)
    if args.scale:
        return _scale(args, jsonio)
    if not args.hf_config and not args.module:
        raise CaptureError("give --hf-config FILE or --module PKG.MOD:FACTORY (or --check / --scale)")

    import torch
    from . import compat
    from .step import RunSpec
    from .models import HFSource, ModuleSource, load_hf_config, parse_dims
    from .capture import capture

    optimizer = args.optimizer or ("adamw-fused" if compat.TORCH2 else "adamw-foreach")
    device = args.device
    if device == "auto":
        device = compat.default_device()
    if device == "cuda" and not compat.cuda_fake_possible():
        raise CaptureError(f"--device cuda: this PyTorch ({torch.__version__}) has no CUDA; fake tensors can claim "
                           "CUDA only in a CUDA build (use --device cpu, or the GPU machines' PyTorch)")
    for name, v in (("--micro-batch", args.micro_batch), ("--seq", args.seq)):
        if v <= 0:
            raise CaptureError(f"{name} {v}: expected a positive integer")
    if args.hf_config:
        d = load_hf_config(args.hf_config)
        source = HFSource(d, args.hf_config, full_layers=args.layers)
    else:
        if not args.layers:
            raise CaptureError("--module needs --layers (the full model's layer count)")
        sys.path.insert(0, os.getcwd())
        source = ModuleSource(args.module, parse_dims(args.dims), args.layers, layers_attr=args.layers_attr)
    if args.precision == "fp16-scaler" and device == "cpu" and compat.TORCH_VERSION < (2, 3):
        raise CaptureError(f"--precision fp16-scaler on the CPU needs PyTorch >= 2.3 (CPU autocast fp16, "
                           f"torch.amp.GradScaler('cpu')); this is {torch.__version__}")
    if optimizer == "adamw-fused" and compat.TORCH_VERSION < (2, 0):
        raise CaptureError(f"--optimizer adamw-fused needs PyTorch >= 2.0 (this is {torch.__version__}); use "
                           "adamw-foreach or adamw-forloop")
    run = RunSpec(args.micro_batch, args.seq, args.precision, args.recompute, optimizer, args.optimizer_device,
                  device, args.sdpa)
    t0 = time.time()
    try:
        doc = capture(source, run, symbolic=not args.no_symbols, progress=say)
    except CaptureError:
        raise
    except Exception as e:  # the model (or PyTorch) failed under fake tensors
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{f.filename}:{f.lineno}" for f in reversed(tb) if "trainsim_capture" not in f.filename
                      and "/torch/" not in f.filename), tb[-1].filename + f":{tb[-1].lineno}" if tb else "?")
        print(f"trainsim_capture: error: the model failed while running under fake tensors: "
              f"{type(e).__name__}: {e} (at {where})", file=sys.stderr)
        if not args.quiet:
            traceback.print_exc()
        return EXIT_MODEL
    say(f"captured in {time.time() - t0:.1f} s: {len(doc['buffers'])} buffers, "
        f"peak {doc['memory']['peak_bytes'] / 2**30:.3f} GiB for {doc['model']['layers']} layers")
    if args.time:
        from .timing import time_capture
        doc = time_capture(doc, source, run, warmup=args.time_warmup)
    from .validate import validate
    problems = validate(doc)
    if problems:
        for p in problems[:20]:
            print(f"trainsim_capture: schema: {p}", file=sys.stderr)
        return 1
    text = jsonio.dumps(doc)
    if args.output:
        jsonio.write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _check(path):
    import json
    from .errors import CaptureError
    from .validate import validate
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        raise CaptureError(f"cannot read a JSON document: {e}", file=path)
    problems = validate(doc)
    for p in problems:
        print(f"{path}: {p}", file=sys.stderr)
    if not problems:
        print(f"{path}: valid trainsim.capture (schema_version {doc.get('schema_version')})")
    return 2 if problems else 0


def _scale(args, jsonio):
    import json
    from .errors import CaptureError
    from .models import parse_dims
    from .scale import scale, ScaleError
    try:
        doc = json.load(open(args.scale))
    except (OSError, ValueError) as e:
        raise CaptureError(f"cannot read a JSON document: {e}", file=args.scale)
    try:
        out = scale(doc, parse_dims(args.set))
    except ScaleError as e:
        raise CaptureError(str(e), file=args.scale)
    text = jsonio.dumps(out)
    if args.output:
        jsonio.write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
