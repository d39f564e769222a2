#!/usr/bin/env python3
"""Measure single-GPU training steps of models we did not write (Hugging Face transformers models built
from a config, and the two models of hand_models.py) and write each as a trainsim measured run
(reports/validation/README.md, "The measured-run JSON (schema version 1)"); issue 39.

Subcommands (device_session.sh calls them in this order; each run is its own process):

  measure.py prepare RUNS_DIR CAPTURES_DIR [--dry-run]
      writes RUNS_DIR/plan.json (runs.py's list), each Hugging Face run's config.json
      (RUNS_DIR/<name>.config.json, from AutoConfig.for_model; this file is both the run's "model"
      and the capture's input), each hand-written run's trainsim model JSON, and
      RUNS_DIR/captures.json (the capture command of every run). Needs transformers for the Hugging
      Face runs (not for --dry-run, which lists only the hand-written ones).
  measure.py run NAME RUNS_DIR [--dry-run]
      one run in this process: build the model on the GPU, 3 warm-up steps, reset the peak memory
      statistics, 10 timed steps; writes RUNS_DIR/<name>.json (a measured run; an OOM row when the
      allocator ran out of memory) or RUNS_DIR/<name>.failed.json (any other error; exit 1).
  measure.py fail NAME RUNS_DIR --reason timeout|budget|crash [--log FILE]
      the driver's record of a run that wrote nothing (killed at its time limit, not started, crashed).
  measure.py captures STAGE_DIR --deadline UNIX_TIME [--jobs 8] [--zoo]
      runs every capture command of STAGE_DIR/runs/captures.json, several at once, each with a time
      limit, then (--zoo) trainsim_capture.hf_zoo into STAGE_DIR/zoo; STAGE_DIR/captures/summary.json.
  measure.py summary STAGE_DIR
      the table (run, status, step ms, peak GiB) and STAGE_DIR/summary.json.

What a run does (the same for every model): torch.manual_seed(1234) before the model is built on the
GPU; fixed random tokens (a CUDA generator seeded 100, randint over the vocabulary, [micro_batch, seq],
the same batch every step); loss = the model's own causal-LM loss (Hugging Face: model(input_ids=ids,
labels=ids, use_cache=False).loss; hand-written: F.cross_entropy over the shifted logits); one
micro-batch per step (no accumulation); loss.backward(); torch.optim.AdamW(params, lr=1e-4,
fused=True) (PyTorch's other defaults: betas (0.9, 0.999), eps 1e-8, weight_decay 0.01) .step();
optimizer.zero_grad(set_to_none=True). "bf16-mixed": fp32 parameters, gradients and AdamW states,
torch.autocast("cuda", dtype=torch.bfloat16) around the forward and the loss (backward and optimizer
outside). "bf16": the model built in bf16 (from_config(..., dtype=torch.bfloat16); hand-written:
model.to(torch.bfloat16)), so gradients and AdamW states are bf16 too, no autocast. Recompute:
Hugging Face model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False});
hand-written: torch.utils.checkpoint.checkpoint(layer, ..., use_reentrant=False) around every layer.
Attention: attn_implementation="sdpa" (what each model really called is recorded: stack.details.sdpa_calls).
TF32 and every other backend flag: PyTorch's defaults, untouched (recorded: stack.details.backend_flags).
Timing: each step starts after torch.cuda.synchronize() and ends with synchronize() after zero_grad;
time.perf_counter around it (measured.step_times_s, as run_step.py) and CUDA events around the same
work (stack.details.cuda_event_step_times_s). Memory: after the build gc.collect() and
torch.cuda.empty_cache() (as run_step.py); torch.cuda.reset_peak_memory_stats() after the warm-up;
measured.peak_*_bytes are max_memory_allocated / max_memory_reserved over the 10 timed steps;
stack.details.memory.whole_run the same over the whole process (build, warm-up and timed steps).
"""
import argparse
import datetime
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import runs as runs_mod  # noqa: E402

SCRIPT = "reports/validation/captured_models/measure.py"
WARMUP_STEPS = 3
TIMED_STEPS = 10
MODULE_PREFIX = "reports.validation.captured_models.hand_models"
DROPOUT_KEYS = ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
                "residual_dropout", "embedding_dropout", "summary_first_dropout", "dropout",
                "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def all_runs(dry):
    return runs_mod.dry_runs() if dry else runs_mod.runs()


def find_run(name, dry):
    for r in all_runs(dry):
        if r["name"] == name:
            return r
    raise SystemExit(f"measure.py: no run named {name!r} in runs.py" + (" (dry run)" if dry else ""))


def strategy_of(r):
    """The trainsim strategy of a run (workloads/strategy_sources.cpp reads it strictly)."""
    return {"schema_version": 1, "gpus": 1, "dp": 1, "tp": 1, "pp": 1, "zero": 0,
            "offload_params": "none", "offload_optimizer": "none",
            "micro_batch": r["micro_batch"], "global_batch": r["micro_batch"],
            "recompute": "full" if r["recompute"] else "none", "precision": r["precision"], "seq": r["seq"]}


def model_file_of(r):
    return f"{r['name']}.config.json" if r["kind"] == "hf" else f"{r['name']}.model.json"


def capture_precision(r):
    return "autocast-bf16" if r["precision"] == "bf16-mixed" else "bf16"


def capture_args(r, runs_dir, out_file, dry):
    """The capture command's arguments (after `python3 -m trainsim_capture`)."""
    if r["kind"] == "hf":
        a = ["--hf-config", os.path.join(runs_dir, model_file_of(r))]
    else:
        dims = ",".join(f"{k}={v}" for k, v in r["config"].items())
        a = ["--module", f"{MODULE_PREFIX}:{r['arch']}", "--dims", dims, "--layers", str(r["layers"])]
    a += ["--micro-batch", str(r["micro_batch"]), "--seq", str(r["seq"]), "--precision", capture_precision(r)]
    if r["recompute"]:
        a.append("--recompute")
    if dry:  # PyTorch 1.13 on the CPU: no fused AdamW, no CUDA to claim
        a += ["--device", "cpu", "--optimizer", "adamw-foreach"]
    return a + ["-o", out_file]


def capture_command_text(r):
    """The capture command as it reads from the repository root, files beside the run."""
    a = capture_args(r, "", f"{r['name']}.capture.json", False)
    return "PYTHONPATH=workloads/capture python3 -m trainsim_capture " + " ".join(shlex.quote(x) for x in a)


def hand_model_doc(r):
    import hand_models as hm
    return hm.trainsim_model_json(r["arch"], r["config"], r["layers"], r["seq"], r["precision"], r["name"])


# ------------------------------------------------------------------------------------------------
# prepare


def make_hf_config(r):
    from transformers import AutoConfig
    kw = dict(r["config"])
    config = AutoConfig.for_model(r["arch"], **kw)
    config.use_cache = False
    return config


def config_mismatches(config, wanted):
    """Keyword arguments the config did not keep as given (ignored or renamed by this transformers)."""
    bad = []
    for k, v in wanted.items():
        have = getattr(config, k, "<missing>")
        if isinstance(have, tuple):
            have = list(have)
        if have != v:
            bad.append({"key": k, "given": v, "config_has": have if isinstance(have, (int, float, str, list, bool,
                                                                                       type(None))) else repr(have)})
    return bad


def cmd_prepare(args):
    runs_dir, cap_dir = os.path.abspath(args.runs_dir), os.path.abspath(args.captures_dir)
    os.makedirs(runs_dir, exist_ok=True)
    os.makedirs(cap_dir, exist_ok=True)
    plan = all_runs(args.dry_run)
    report = {"date": utc_now(), "runs": len(plan), "config_errors": {}, "config_mismatches": {}}
    try:
        import transformers
        report["transformers"] = transformers.__version__
    except ImportError:
        transformers = None
        report["transformers"] = None
    captures = []
    for r in plan:
        path = os.path.join(runs_dir, model_file_of(r))
        if r["kind"] == "hf":
            try:
                if transformers is None:
                    raise RuntimeError("transformers is not installed for this Python")
                config = make_hf_config(r)
                from transformers import AutoConfig
                back, form_errors = None, []
                # every key (to_dict), else what save_pretrained writes (the keys that differ from the
                # class's defaults); the written file is read back as the run and the capture read it
                for use_diff in (False, True):
                    with open(path + ".tmp", "w") as f:
                        f.write(config.to_json_string(use_diff=use_diff))
                    os.replace(path + ".tmp", path)
                    try:
                        with open(path) as f:
                            d = json.load(f)
                        back = AutoConfig.for_model(d.pop("model_type"), **d)
                        report.setdefault("config_form", {})[r["name"]] = "to_json_string(use_diff=%s)" % use_diff
                        break
                    except Exception as e:  # noqa: BLE001
                        form_errors.append(f"use_diff={use_diff}: {type(e).__name__}: {e}"[:500])
                if back is None:
                    raise RuntimeError("the written config.json does not read back: " + "; ".join(form_errors))
                bad = config_mismatches(back, {k: v for k, v in r["config"].items() if k != "architectures"})
                if bad:
                    report["config_mismatches"][r["name"]] = bad
                    print(f"prepare: {r['name']}: config kept other values than given: {bad}", flush=True)
            except Exception as e:  # noqa: BLE001 - one architecture failing must not stop the others
                report["config_errors"][r["name"]] = f"{type(e).__name__}: {e}"[:2000]
                print(f"prepare: {r['name']}: cannot make its config: {type(e).__name__}: {e}", flush=True)
                continue
        else:
            write_json(path, hand_model_doc(r))
        out = os.path.join(cap_dir, f"{r['name']}.capture.json")
        captures.append({"name": r["name"], "args": capture_args(r, runs_dir, out, args.dry_run), "output": out,
                         "log": os.path.join(cap_dir, f"{r['name']}.capture.log")})
    write_json(os.path.join(runs_dir, "plan.json"), plan)
    write_json(os.path.join(runs_dir, "captures.json"), captures)
    write_json(os.path.join(runs_dir, "prepare.json"), report)
    print(f"prepare: {len(plan)} runs, {len(captures)} capture commands, "
          f"{len(report['config_errors'])} config errors, {len(report['config_mismatches'])} runs with config "
          f"mismatches", flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# run


class Failure(Exception):
    pass


def driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            line = f.readline()
        parts = line.split()
        for i, p in enumerate(parts):
            if p == "Module" and i + 1 < len(parts):
                return parts[i + 1]
        return line.strip()[:200]
    except OSError:
        return None


def cpu_times():
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def steal_fraction(before, after):
    """steal / (user + nice + system + irq + softirq + steal) between two /proc/stat readings (as
    run_step.py records it); None where unknown."""
    if not before or not after or len(before) < 8 or len(after) < 8:
        return None
    d = [a - b for a, b in zip(after, before)]
    parts = [d[0], d[1], d[2], d[5], d[6], d[7]]
    if min(parts) < 0 or sum(parts) <= 0:
        return None
    return d[7] / sum(parts)


def pkg_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return None


def autocast_on(torch):
    try:
        return bool(torch.is_autocast_enabled("cuda"))
    except TypeError:  # PyTorch < 2.4: the CUDA state without an argument
        return bool(torch.is_autocast_enabled())


class SdpaLog:
    """Wraps torch.nn.functional.scaled_dot_product_attention during the first warm-up forward and
    records what the model passed it (one entry per distinct call signature, with a count) and the
    backend PyTorch picks for those inputs (torch._fused_sdp_choice, on the inputs as SDPA receives
    them after autocast's cast)."""

    def __init__(self, torch):
        self.torch = torch
        self.F = torch.nn.functional
        self.orig = getattr(self.F, "scaled_dot_product_attention", None)
        self.entries = {}
        self.on = False
        self.errors = set()
        try:
            from torch.nn.attention import SDPBackend
            self.backends = {int(m.value): n for n, m in SDPBackend.__members__.items()}
        except Exception:  # noqa: BLE001
            self.backends = {}

    def install(self):
        if self.orig is None:
            return
        log = self

        def scaled_dot_product_attention(*args, **kwargs):
            if log.on:
                try:
                    log.record(args, kwargs)
                except Exception as e:  # noqa: BLE001 - recording must never change the run
                    log.errors.add(f"{type(e).__name__}: {e}"[:300])
            return log.orig(*args, **kwargs)

        self.F.scaled_dot_product_attention = scaled_dot_product_attention

    def remove(self):
        if self.orig is not None:
            self.F.scaled_dot_product_attention = self.orig

    def record(self, args, kwargs):
        torch = self.torch
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        q, k, v = bound["query"], bound["key"], bound["value"]
        mask = bound.get("attn_mask")
        dropout_p, is_causal = float(bound.get("dropout_p", 0.0)), bool(bound.get("is_causal", False))
        scale, gqa = bound.get("scale"), bool(bound.get("enable_gqa", False))
        backend = None
        choice = getattr(torch, "_fused_sdp_choice", None)
        if choice is not None and q.is_cuda:
            qc, kc, vc = q, k, v
            if autocast_on(torch) and q.dtype == torch.float32:
                try:
                    adt = torch.get_autocast_dtype("cuda")
                except AttributeError:
                    adt = torch.get_autocast_gpu_dtype()
                qc, kc, vc = q.to(adt), k.to(adt), v.to(adt)
            try:
                try:
                    idx = choice(qc, kc, vc, mask, dropout_p, is_causal, scale=scale, enable_gqa=gqa)
                except TypeError:
                    idx = choice(qc, kc, vc, mask, dropout_p, is_causal, scale=scale)
                backend = self.backends.get(int(idx), str(int(idx)))
            except Exception as e:  # noqa: BLE001
                self.errors.add(f"_fused_sdp_choice: {type(e).__name__}: {e}"[:300])
            del qc, kc, vc

        def sig(t):
            return None if t is None else {"shape": list(t.shape), "stride": list(t.stride()),
                                           "dtype": str(t.dtype).replace("torch.", "")}
        entry = {"query": sig(q), "key": sig(k), "value": sig(v), "attn_mask": sig(mask) if isinstance(
            mask, torch.Tensor) else mask, "dropout_p": dropout_p, "is_causal": is_causal, "scale": scale,
            "enable_gqa": gqa, "autocast": autocast_on(torch), "backend_chosen": backend}
        key = json.dumps(entry, sort_keys=True, default=str)
        if key in self.entries:
            self.entries[key]["calls_per_forward"] += 1
        else:
            entry["calls_per_forward"] = 1
            self.entries[key] = entry

    def result(self):
        out = list(self.entries.values())
        return {"calls": out, "errors": sorted(self.errors),
                "method": "torch.nn.functional.scaled_dot_product_attention wrapped during the first warm-up "
                          "forward only; backend_chosen = torch._fused_sdp_choice on the same inputs (cast to "
                          "autocast's dtype where autocast would cast them)"}


def build_hf(r, runs_dir, torch, dev, details):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    path = os.path.join(runs_dir, model_file_of(r))
    if not os.path.exists(path):
        raise Failure(f"{path} is missing (measure.py prepare writes it)")
    with open(path) as f:
        d = json.load(f)
    mt = d.pop("model_type")
    config = AutoConfig.for_model(mt, **d)
    config.use_cache = False
    dtype = torch.bfloat16 if r["precision"] == "bf16" else torch.float32
    how = []
    import contextlib
    with (torch.device(dev) if dev != "cpu" else contextlib.nullcontext()):
        kw = {"attn_implementation": "sdpa"}
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, **kw)
            how.append(f"AutoModelForCausalLM.from_config(config, dtype={dtype}, attn_implementation='sdpa')")
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, **kw)
            how.append(f"AutoModelForCausalLM.from_config(config, torch_dtype={dtype}, attn_implementation='sdpa')")
        except (ValueError, ImportError) as e:
            details["sdpa_refused"] = f"{type(e).__name__}: {e}"[:1000]
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
            how.append(f"AutoModelForCausalLM.from_config(config, dtype={dtype}) (sdpa refused)")
    if dev != "cpu":
        how.append("under `with torch.device('cuda')`")
    devices = {str(p.device) for p in model.parameters()}
    if dev != "cpu" and any(not p.is_cuda for p in model.parameters()):
        model.to(dev)
        how.append("then model.to('cuda') (parameters were built on " + ",".join(sorted(devices)) + ")")
    dtypes = {str(p.dtype) for p in model.parameters()}
    if dtypes != {str(dtype)}:
        model.to(dtype)
        how.append(f"then model.to({dtype}) (parameters were built as {sorted(dtypes)})")
    model.train()
    if r["recompute"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        how.append("model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})")
        n_ckpt = sum(1 for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True)
        details["checkpointed_modules"] = n_ckpt
        if n_ckpt == 0:
            raise Failure("gradient_checkpointing_enable left no module with gradient_checkpointing = True")
    nonzero = {k: getattr(model.config, k) for k in DROPOUT_KEYS
               if isinstance(getattr(model.config, k, None), float) and getattr(model.config, k) > 0}
    drop_modules = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Dropout) and m.p > 0]
    details.update({
        "framework": "transformers", "transformers": transformers.__version__, "model_type": mt,
        "model_class": type(model).__name__, "architectures": d.get("architectures"),
        "build": "; ".join(how), "config_file": model_file_of(r),
        "attn_implementation_requested": "sdpa",
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "dropout_nonzero_config": nonzero, "dropout_modules_nonzero": drop_modules,
        "loss": "model(input_ids=ids, labels=ids, use_cache=False).loss (transformers' causal-LM loss: labels "
                "shifted inside, logits upcast to fp32, mean over the tokens)",
        "recompute_how": "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})"
                         if r["recompute"] else None,
    })
    V = model.config.vocab_size

    def loss_fn(ids):
        return model(input_ids=ids, labels=ids, use_cache=False).loss

    return model, loss_fn, V


def build_hand(r, runs_dir, torch, dev, details):
    import hand_models as hm
    from torch.utils.checkpoint import checkpoint
    path = os.path.join(runs_dir, model_file_of(r))
    write_json(path, hand_model_doc(r))
    factory, loss = hm.FACTORIES[r["arch"]], hm.LOSSES[r["arch"]]
    how = [f"hand_models.{r['arch']}(layers={r['layers']}, " + ", ".join(f"{k}={v}" for k, v in r["config"].items())
           + ") in fp32"]
    if dev == "cpu":
        model = factory(layers=r["layers"], **r["config"])
    else:
        with torch.device(dev):
            model = factory(layers=r["layers"], **r["config"])
        how.append("under `with torch.device('cuda')`")
    if r["precision"] == "bf16":
        model.to(torch.bfloat16)
        how.append("then model.to(torch.bfloat16)")
    model.train()
    layers = getattr(model, factory.trainsim_layers_attr)
    if r["recompute"]:
        for layer in layers:
            layer.forward = (lambda f: (lambda *a: checkpoint(f, *a, use_reentrant=False)))(layer.forward)
        how.append(f"every layer of model.{factory.trainsim_layers_attr} wrapped in "
                   "torch.utils.checkpoint.checkpoint(layer.forward, ..., use_reentrant=False)")
    dims = ",".join(f"{k}={v}" for k, v in r["config"].items())
    details.update({
        "framework": "plain PyTorch", "script": "reports/validation/captured_models/hand_models.py",
        "architecture": hm.__doc__.split("\n\n")[1 if r["arch"] == "gpt_unfused" else 2].strip(),
        "build": "; ".join(how), "model_file": model_file_of(r),
        "capture_module": f"{MODULE_PREFIX}:{r['arch']}",
        "capture_dims": dims, "capture_layers": r["layers"],
        "attn_implementation": "materialized by hand (matmul, masked_fill, softmax, matmul)"
                               if r["arch"] == "gpt_unfused" else "torch.nn.functional.scaled_dot_product_attention"
                                                                   "(is_causal=True) after repeat_interleave of K and V",
        "loss": ("F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)) in the logits' dtype"
                 if r["arch"] == "gpt_unfused" else
                 "F.cross_entropy(logits.float()[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))"),
        "recompute_how": how[-1] if r["recompute"] else None,
    })
    V = r["config"]["V"]

    def loss_fn(ids):
        return loss(model, ids)

    return model, loss_fn, V


def cmd_run(args):
    r = find_run(args.name, args.dry_run)
    runs_dir = os.path.abspath(args.runs_dir)
    os.makedirs(runs_dir, exist_ok=True)
    t_process = time.perf_counter()
    state = {"phase": "import torch"}
    command = "python3 " + " ".join(shlex.quote(x) for x in [SCRIPT] + sys.argv[1:])
    details = {"measure_script": SCRIPT, "run_plan": {k: v for k, v in r.items() if k != "config"},
               "config_given": r["config"],
               "reproduce": "from the repository root: python3 reports/validation/captured_models/measure.py prepare "
                            "RUNS CAPTURES" + (" --dry-run" if args.dry_run else "") + " (writes the run's model "
                            "file), then python3 reports/validation/captured_models/measure.py run " + r["name"]
                            + " RUNS" + (" --dry-run" if args.dry_run else ""),
               "capture_command": capture_command_text(r),
               "capture_file": f"{r['name']}.capture.json (captures/ of the session's archive)"}
    prov = {"script": SCRIPT, "command": command, "date": utc_now(), "host": socket.gethostname(), "gpus": 1,
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "python": sys.version.split()[0]}
    base = {"schema_version": 1, "kind": "trainsim.measured_run", "name": r["name"], "provenance": prov,
            "model": model_file_of(r), "stack": {"name": "pytorch", "details": details},
            "strategy": strategy_of(r)}
    torch = None
    try:
        import torch
        dry = args.dry_run
        if not dry and not torch.cuda.is_available():
            raise Failure("no CUDA device (use --dry-run on a machine without a GPU)")
        dev = "cpu" if dry else "cuda"
        OOM = tuple(c for c in (getattr(torch, "OutOfMemoryError", None), getattr(torch.cuda, "OutOfMemoryError", None))
                    if c is not None)
        prov.update({"torch": torch.__version__, "cuda": torch.version.cuda,
                     "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
                     "driver": driver_version(), "transformers": pkg_version("transformers"),
                     "accelerate": pkg_version("accelerate")})
        if dry:
            prov.update({"gpu": "cpu (dry run)", "dry_run": True})
        else:
            torch.cuda.set_device(0)
            props = torch.cuda.get_device_properties(0)
            free, total = torch.cuda.mem_get_info()
            prov.update({"gpu": torch.cuda.get_device_name(0), "gpu_memory_bytes": props.total_memory})
            details["gpu_free_bytes_at_start"] = free
        def flag(obj, name):
            try:
                v = getattr(obj, name)
                return v if isinstance(v, (bool, int, float, str)) or v is None else str(v)
            except Exception:  # noqa: BLE001 - absent in this PyTorch
                return None
        details["backend_flags"] = {
            "cuda.matmul.allow_tf32": flag(torch.backends.cuda.matmul, "allow_tf32"),
            "cuda.matmul.allow_bf16_reduced_precision_reduction":
                flag(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
            "cuda.matmul.fp32_precision": flag(torch.backends.cuda.matmul, "fp32_precision"),
            "cudnn.allow_tf32": flag(torch.backends.cudnn, "allow_tf32"),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "note": "PyTorch's defaults, not set by this script"}
        details["env"] = {k: os.environ.get(k) for k in ("PYTORCH_CUDA_ALLOC_CONF", "CUDA_MODULE_LOADING",
                                                          "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                          "OMP_NUM_THREADS")}
        try:
            details["cpu_affinity"] = sorted(os.sched_getaffinity(0))
        except AttributeError:
            pass
        details["seed"] = 1234
        details["expect_oom"] = r.get("expect_oom")
        torch.manual_seed(1234)
        state["phase"] = "build"
        t_build = time.perf_counter()
        if r["kind"] == "hf":
            model, loss_fn, V = build_hf(r, runs_dir, torch, dev, details)
        else:
            model, loss_fn, V = build_hand(r, runs_dir, torch, dev, details)
        params = list(model.parameters())
        n_params = sum(p.numel() for p in params)
        details["params_total"] = n_params
        details["param_dtypes"] = sorted({str(p.dtype).replace("torch.", "") for p in params})
        import gc
        gc.collect()
        if not dry:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            details["memory_after_build"] = {"allocated_bytes": torch.cuda.memory_allocated(),
                                             "reserved_bytes": torch.cuda.memory_reserved(),
                                             "max_allocated_bytes": torch.cuda.max_memory_allocated()}
        build_s = time.perf_counter() - t_build

        opt_how = "torch.optim.AdamW(params, lr=1e-4, fused=True)"
        try:
            opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
        except (TypeError, RuntimeError, ValueError) as e:
            if not dry:
                raise
            opt = torch.optim.AdamW(params, lr=1e-4)
            opt_how = f"torch.optim.AdamW(params, lr=1e-4) (dry run: fused refused: {str(e).splitlines()[0][:200]})"
        details["optimizer"] = opt_how + "; PyTorch's defaults otherwise (betas (0.9, 0.999), eps 1e-8, " \
                                         "weight_decay 0.01); zero_grad(set_to_none=True); no gradient clipping"
        details["grad_accum"] = 1
        gen = torch.Generator(device=dev)
        gen.manual_seed(100)
        ids = torch.randint(0, V, (r["micro_batch"], r["seq"]), device=dev, generator=gen)
        details["data"] = ("fixed random tokens: torch.Generator(device) seeded 100, torch.randint(0, vocab, "
                           "(micro_batch, seq)); the same batch every step; labels = the inputs (shifted by the loss)")
        details["mixed_precision"] = (
            "torch.autocast('cuda', dtype=torch.bfloat16) around forward and loss; fp32 parameters, gradients "
            "and AdamW states; backward and optimizer outside autocast" if r["precision"] == "bf16-mixed" else
            "none: bf16 parameters, gradients and AdamW states (no fp32 master weights), no autocast")
        autocast = r["precision"] == "bf16-mixed"
        import contextlib

        def amp():
            return torch.autocast(device_type=dev, dtype=torch.bfloat16) if autocast else contextlib.nullcontext()

        def sync():
            if not dry:
                torch.cuda.synchronize()

        sdpa = SdpaLog(torch)
        simulate = r.get("simulate")

        def train_step(tag):
            state["phase"] = f"{tag}: forward and loss"
            with amp():
                loss = loss_fn(ids)
            sdpa.on = False
            state["phase"] = f"{tag}: backward"
            if simulate == "oom":
                raise OOM[0]("CUDA out of memory. Tried to allocate 1.00 GiB (simulated by the dry run)")
            if simulate == "hang":
                time.sleep(3600)
            loss.backward()
            state["phase"] = f"{tag}: optimizer step"
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()

        warm_times, losses = [], []
        sdpa.install()
        try:
            for i in range(WARMUP_STEPS):
                sdpa.on = i == 0
                sync()
                t0 = time.perf_counter()
                losses.append(train_step(f"warm-up step {i + 1}"))
                sync()
                warm_times.append(time.perf_counter() - t0)
        finally:
            sdpa.on = False
            sdpa.remove()
        details["sdpa_calls"] = sdpa.result()
        state["phase"] = "between warm-up and timed steps"
        if not dry:
            before = {"max_allocated": torch.cuda.max_memory_allocated(),
                      "max_reserved": torch.cuda.max_memory_reserved()}
            torch.cuda.reset_peak_memory_stats()
        host_times, event_times = [], []
        cpu_before = cpu_times()
        for i in range(TIMED_STEPS):
            sync()
            t0 = time.perf_counter()
            if not dry:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
            losses.append(train_step(f"timed step {i + 1}"))
            if not dry:
                e1.record()
            sync()
            host_times.append(time.perf_counter() - t0)
            if not dry:
                event_times.append(e0.elapsed_time(e1) / 1000.0)
        steal = steal_fraction(cpu_before, cpu_times())
        state["phase"] = "after the timed steps"
        loss_values = [float(x) for x in losses]
        if dry:
            import resource
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            peak_alloc = peak_res = whole_alloc = whole_res = rss
            details["memory"] = {"dry_run": "no GPU: every peak is the process's max resident set size"}
        else:
            peak_alloc, peak_res = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
            whole_alloc, whole_res = max(before["max_allocated"], peak_alloc), max(before["max_reserved"], peak_res)
            stats = torch.cuda.memory_stats()
            details["memory"] = {
                "timed_steps": {"max_memory_allocated_bytes": peak_alloc, "max_memory_reserved_bytes": peak_res,
                                "what": "torch.cuda.max_memory_allocated/max_memory_reserved over the 10 timed "
                                        "steps (peak statistics reset after the warm-up); = measured.peak_*_bytes"},
                "whole_run": {"max_memory_allocated_bytes": whole_alloc, "max_memory_reserved_bytes": whole_res,
                              "what": "the same over the whole process: model build, warm-up and timed steps"},
                "warmup_and_build": {"max_memory_allocated_bytes": before["max_allocated"],
                                     "max_memory_reserved_bytes": before["max_reserved"]},
                "allocator": {k: stats.get(k) for k in ("num_alloc_retries", "num_ooms", "num_device_alloc",
                                                        "num_device_free", "num_sync_all_streams")},
            }
        med = statistics.median(host_times)
        details.update({
            "timing": "time.perf_counter between torch.cuda.synchronize() before the step and after zero_grad "
                      "(measured.step_times_s); CUDA events recorded around the same work "
                      "(cuda_event_step_times_s)",
            "cuda_event_step_times_s": event_times or None,
            "cuda_event_step_time_s": statistics.median(event_times) if event_times else None,
            "loss_first_step": loss_values[0], "loss_last_step": loss_values[-1], "losses": loss_values,
            "process_s": time.perf_counter() - t_process,
        })
        if steal is not None:
            prov["cpu_steal_fraction"] = steal
        doc = dict(base)
        doc["measured"] = {
            "warmup_steps": WARMUP_STEPS, "warmup_step_times_s": warm_times,
            "step_times_s": host_times, "step_time_s": med,
            "step_time_spread": (max(host_times) - min(host_times)) / med,
            "step_times_s_per_rank": [host_times],
            "peak_allocated_bytes": [peak_alloc], "peak_reserved_bytes": [peak_res],
            "params_per_rank": [n_params], "tokens_per_s": r["micro_batch"] * r["seq"] / med,
            "build_s": build_s,
        }
        write_json(os.path.join(runs_dir, f"{r['name']}.json"), doc)
        if args.step_profile and not dry:
            # after the row's peaks are read: the profiled steps change the allocator's statistics
            import step_profile
            try:
                write_json(args.step_profile, step_profile.profile_step(torch, train_step, sync))
            except Exception as e:  # noqa: BLE001 - the row stands without its profile
                write_json(args.step_profile, {"kind": "trainsim.step_profile", "error": f"{type(e).__name__}: {e}",
                                               "traceback": traceback.format_exc()[-4000:]})
        print(f"{r['name']}: step {med * 1e3:.1f} ms (spread {doc['measured']['step_time_spread']:.3f}), "
              f"peak allocated {peak_alloc / 2**30:.2f} GiB, reserved {peak_res / 2**30:.2f} GiB, "
              f"{n_params / 1e9:.3f} B parameters, loss {loss_values[0]:.3f} -> {loss_values[-1]:.3f}", flush=True)
        return 0
    except BaseException as e:  # noqa: BLE001 - every outcome is written down
        if isinstance(e, KeyboardInterrupt):
            raise
        chain, c = [], e
        while c is not None and len(chain) < 10:
            chain.append(c)
            c = c.__cause__ or c.__context__
        is_oom = torch is not None and any(
            (isinstance(x, tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                             getattr(torch.cuda, "OutOfMemoryError", None)) if t)))
            or "out of memory" in str(x).lower() or "CUBLAS_STATUS_ALLOC_FAILED" in str(x) for x in chain)
        message = f"{type(e).__name__}: {e}"
        if is_oom:
            oom = {"at": state["phase"], "error_type": type(e).__name__}
            if torch is not None and torch.cuda.is_available() and not args.dry_run:
                try:
                    free, total = torch.cuda.mem_get_info()
                    oom.update({"max_memory_allocated_bytes": torch.cuda.max_memory_allocated(),
                                "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(),
                                "memory_allocated_bytes": torch.cuda.memory_allocated(),
                                "gpu_free_bytes_after": free, "gpu_total_bytes": total})
                except Exception:  # noqa: BLE001
                    pass
            details["oom"] = oom
            doc = dict(base)
            doc["measured"] = {"oom": True, "oom_message": message[:4000]}
            write_json(os.path.join(runs_dir, f"{r['name']}.json"), doc)
            print(f"{r['name']}: OUT OF MEMORY at {state['phase']}: {message.splitlines()[0][:300]}", flush=True)
            return 0
        failed = {"schema_version": 1, "kind": "trainsim.measured_run_failed", "name": r["name"],
                  "reason": "error", "phase": state["phase"], "error": message[:4000],
                  "traceback": traceback.format_exc()[-8000:], "provenance": prov, "strategy": strategy_of(r),
                  "model": model_file_of(r), "run_plan": details.get("run_plan")}
        write_json(os.path.join(runs_dir, f"{r['name']}.failed.json"), failed)
        print(f"{r['name']}: FAILED at {state['phase']}: {message.splitlines()[0][:500] if message else ''}",
              file=sys.stderr, flush=True)
        traceback.print_exc()
        return 1


# ------------------------------------------------------------------------------------------------
# fail (no torch)


def cmd_fail(args):
    runs_dir = os.path.abspath(args.runs_dir)
    r = find_run(args.name, args.dry_run)
    if os.path.exists(os.path.join(runs_dir, f"{r['name']}.json")):
        return 0  # the run wrote its own row before it ended
    tail = None
    if args.log and os.path.exists(args.log):
        with open(args.log, errors="replace") as f:
            tail = f.read()[-4000:]
    what = {"timeout": f"killed at its time limit ({args.limit_s} s)" if args.limit_s else "killed at its time limit",
            "budget": "not started: too little of the session's time left",
            "crash": "the process ended without writing its row"}[args.reason]
    write_json(os.path.join(runs_dir, f"{r['name']}.failed.json"), {
        "schema_version": 1, "kind": "trainsim.measured_run_failed", "name": r["name"], "reason": args.reason,
        "error": what, "log_tail": tail, "date": utc_now(), "strategy": strategy_of(r), "model": model_file_of(r),
        "run_plan": {k: v for k, v in r.items() if k != "config"}})
    return 0


# ------------------------------------------------------------------------------------------------
# captures (no torch in this process)


def cmd_captures(args):
    import signal
    stage = os.path.abspath(args.stage)
    runs_dir, cap_dir = os.path.join(stage, "runs"), os.path.join(stage, "captures")
    os.makedirs(cap_dir, exist_ok=True)
    with open(os.path.join(runs_dir, "captures.json")) as f:
        jobs = json.load(f)
    if os.environ.get("CAPTURE_NO_SYMBOLS") == "1":  # each run's own size only: 4 times faster, not scalable
        for j in jobs:
            j["args"] = list(j["args"]) + ["--no-symbols"]
    repo = os.getcwd()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(repo, "workloads", "capture") + (os.pathsep + env["PYTHONPATH"]
                                                                      if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    python = args.python or sys.executable
    results, lock, children = {}, threading.Lock(), set()
    stopping = threading.Event()
    t_start = time.time()

    def stop(signum, frame):  # the driver's TERM at its budget: end every child (and the zoo's group)
        stopping.set()
        with lock:
            for p in list(children):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
        save()
        os._exit(0)

    def save():
        doc = {"jobs": args.jobs, "seconds": round(time.time() - t_start, 1), "captures": dict(sorted(results.items()))}
        write_json(os.path.join(cap_dir, "summary.json"), doc)

    def start(argv, log):
        with lock:
            if stopping.is_set():
                return None
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=repo,
                                 start_new_session=True)
            children.add(p)
        return p

    def wait(p, limit):
        try:
            return p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
            return "timeout"
        finally:
            with lock:
                children.discard(p)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def one(job):
        left = args.deadline - time.time()
        if left < 5 or stopping.is_set():
            with lock:
                results[job["name"]] = {"status": "skipped", "reason": "session deadline"}
                save()
            return
        t0 = time.time()
        with open(job["log"], "w") as log:
            p = start([python, "-m", "trainsim_capture"] + job["args"], log)
            code = wait(p, min(args.timeout, left)) if p is not None else "stopped"
        dt = round(time.time() - t0, 1)
        ok = code == 0 and os.path.exists(job["output"])
        tail = None
        if not ok:
            with open(job["log"], errors="replace") as f:
                lines = [x for x in f.read().splitlines() if x.strip()]
            tail = next((x for x in lines if "error" in x.lower()), lines[-1] if lines else None)
        with lock:
            results[job["name"]] = {"status": "ok" if ok else ("timeout" if code == "timeout" else "failed"),
                                    "exit": code, "seconds": dt, "error": tail,
                                    "command": "python3 -m trainsim_capture " + " ".join(shlex.quote(a) for a in job["args"])}
            save()
        print(f"capture {'ok  ' if ok else 'FAIL'} {job['name']} ({dt} s)" + ("" if ok else f": {tail}"), flush=True)

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        list(ex.map(one, jobs))
    n_ok = sum(1 for v in results.values() if v["status"] == "ok")
    print(f"captures: {n_ok} of {len(jobs)} written in {time.time() - t_start:.0f} s", flush=True)
    if args.zoo:
        left = args.deadline - time.time()
        zoo = os.path.join(stage, "zoo")
        if left < 30:
            print("captures: hf_zoo not started (session deadline)", flush=True)
        else:
            print(f"captures: hf_zoo into {zoo} ({left:.0f} s left)", flush=True)
            with open(os.path.join(stage, "zoo.log"), "w") as log:
                p = start([python, "-m", "trainsim_capture.hf_zoo", zoo, "--jobs", str(args.jobs),
                           "--variants", "autocast-bf16,autocast-bf16.recompute,bf16,bf16.recompute",
                           "--timeout", str(int(max(10, min(args.timeout, left - 5))))], log)
                code = wait(p, left) if p is not None else "stopped"
            print(f"captures: hf_zoo ended ({code}) {time.time() - t_start:.0f} s after the captures started", flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# summary (no torch)


def cmd_summary(args):
    stage = os.path.abspath(args.stage)
    runs_dir = os.path.join(stage, "runs")
    try:
        with open(os.path.join(runs_dir, "plan.json")) as f:
            plan = json.load(f)
    except OSError:
        plan = []
    caps = {}
    try:
        with open(os.path.join(stage, "captures", "summary.json")) as f:
            caps = json.load(f).get("captures", {})
    except (OSError, ValueError):
        pass
    rows, counts = [], {}
    for r in plan:
        name = r["name"]
        row = {"name": name, "arch": r["arch"], "precision": r["precision"], "recompute": r["recompute"],
               "micro_batch": r["micro_batch"], "seq": r["seq"], "expect_oom": r.get("expect_oom"),
               "capture": caps.get(name, {}).get("status", "not run")}
        ok_path, fail_path = os.path.join(runs_dir, f"{name}.json"), os.path.join(runs_dir, f"{name}.failed.json")
        if os.path.exists(ok_path):
            with open(ok_path) as f:
                doc = json.load(f)
            m = doc.get("measured", {})
            if m.get("oom"):
                row["status"] = "oom"
                row["oom_at"] = doc.get("stack", {}).get("details", {}).get("oom", {}).get("at")
            else:
                row["status"] = "ok"
                row["step_ms"] = round(m["step_time_s"] * 1e3, 1)
                row["spread"] = round(m.get("step_time_spread", 0.0), 3)
                row["peak_alloc_gib"] = round(m["peak_allocated_bytes"][0] / 2**30, 2)
                row["peak_reserved_gib"] = round(m["peak_reserved_bytes"][0] / 2**30, 2)
                whole = doc.get("stack", {}).get("details", {}).get("memory", {}).get("whole_run", {})
                if whole.get("max_memory_allocated_bytes"):
                    row["whole_alloc_gib"] = round(whole["max_memory_allocated_bytes"] / 2**30, 2)
        elif os.path.exists(fail_path):
            with open(fail_path) as f:
                doc = json.load(f)
            row["status"] = doc.get("reason", "failed")
            row["error"] = (doc.get("error") or "")[:200]
        else:
            row["status"] = "missing"
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        rows.append(row)
    variants = {}
    for row in rows:
        if row["status"] == "ok":
            k = f"{row['precision']}{' recompute' if row['recompute'] else ''}"
            variants[k] = variants.get(k, 0) + 1
    archs = sorted({row["arch"] for row in rows if row["status"] == "ok"})
    lines = [f"{'run':58s} {'status':8s} {'step ms':>8s} {'spread':>7s} {'peak GiB':>9s} {'resv GiB':>9s} "
             f"{'whole GiB':>9s}  capture"]
    for row in rows:
        lines.append(f"{row['name'][:58]:58s} {row['status'][:8]:8s} {row.get('step_ms', ''):>8} "
                     f"{row.get('spread', ''):>7} {row.get('peak_alloc_gib', ''):>9} {row.get('peak_reserved_gib', ''):>9} "
                     f"{row.get('whole_alloc_gib', ''):>9}  {row['capture']}"
                     + (f"  (expected OOM: {row['expect_oom']})" if row.get("expect_oom") else "")
                     + (f"  [{row['error']}]" if row.get("error") else ""))
    lines.append(f"status: {json.dumps(counts, sort_keys=True)}; timed runs by variant: "
                 f"{json.dumps(variants, sort_keys=True)}; architectures timed: {len(archs)} ({', '.join(archs)})")
    n_caps_ok = sum(1 for v in caps.values() if v.get("status") == "ok")
    lines.append(f"captures: {n_caps_ok} of {len(caps)} ok")
    text = "\n".join(lines)
    print(text, flush=True)
    with open(os.path.join(stage, "summary.txt"), "w") as f:
        f.write(text + "\n")
    write_json(os.path.join(stage, "summary.json"), {"rows": rows, "status_counts": counts,
                                                     "timed_by_variant": variants, "architectures_timed": archs,
                                                     "captures_ok": n_caps_ok, "captures": len(caps)})
    return 0


def cmd_collect(args):
    """The rows trainsim validate reads, from unpacked session archives (later ones complete earlier
    ones: a run measured in a later session replaces its failure row): every measured row with the
    config.json or model JSON it names, `"oom": false` on a run that ran (so validate checks that it
    is predicted to fit), `"capture"` where the session captured it, `"profile"` the machine's
    calibration when given. Writes nothing unless every row has its model file."""
    import gzip
    import shutil
    rows = {}
    for stage in args.stages:
        runs_dir, cap_dir = os.path.join(stage, "runs"), os.path.join(stage, "captures")
        for f in sorted(os.listdir(runs_dir)):
            if not f.endswith(".json") or f.count(".") != 1:
                continue
            with open(os.path.join(runs_dir, f)) as fh:
                doc = json.load(fh)
            if not isinstance(doc, dict) or doc.get("kind") != "trainsim.measured_run":
                continue
            extra = {}
            model = os.path.join(runs_dir, doc["model"])
            if not os.path.isfile(model):
                print(f"collect: {f}: model {doc['model']} missing", file=sys.stderr)
                return 2
            extra[doc["model"]] = model
            # A hand-written model's row names the capture of its own code (gzipped); a Hugging
            # Face row names none: trainsim predicts it from the committed capture of its family
            # (workloads/captures/hf/), as a user's --model config.json is.
            cap = os.path.join(cap_dir, doc["name"] + ".capture.json")
            if os.path.isfile(cap) and not doc["model"].endswith(".config.json"):
                doc["capture"] = os.path.basename(cap) + ".gz"
                extra[doc["capture"]] = cap
            if not doc["measured"].get("oom"):
                doc["measured"]["oom"] = False
            rows[doc["name"]] = (doc, extra)
    os.makedirs(args.dest, exist_ok=True)
    if args.profile:
        shutil.copyfile(args.profile, os.path.join(args.dest, os.path.basename(args.profile)))
    for name, (doc, extra) in sorted(rows.items()):
        if args.profile:
            doc["profile"] = os.path.basename(args.profile)
        write_json(os.path.join(args.dest, name + ".json"), doc)
        for base, src in extra.items():
            if base.endswith(".gz") and not src.endswith(".gz"):
                with open(src, "rb") as fi, open(os.path.join(args.dest, base), "wb") as fo:
                    fo.write(gzip.compress(fi.read(), 9, mtime=0))  # mtime 0: the same bytes on every run
            else:
                shutil.copyfile(src, os.path.join(args.dest, base))
    print(f"collect: {len(rows)} rows into {args.dest}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="measure.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("runs_dir")
    a.add_argument("captures_dir")
    a.add_argument("--dry-run", action="store_true")
    a = sub.add_parser("run")
    a.add_argument("name")
    a.add_argument("runs_dir")
    a.add_argument("--dry-run", action="store_true")
    a.add_argument("--step-profile", metavar="FILE",
                   help="then profile one more step's kernels and another's memory at its peak (step_profile.py)")
    a = sub.add_parser("fail")
    a.add_argument("name")
    a.add_argument("runs_dir")
    a.add_argument("--reason", required=True, choices=("timeout", "budget", "crash"))
    a.add_argument("--log")
    a.add_argument("--limit-s", type=int)
    a.add_argument("--dry-run", action="store_true")
    a = sub.add_parser("captures")
    a.add_argument("stage")
    a.add_argument("--deadline", type=float, required=True, help="Unix time after which nothing new starts")
    a.add_argument("--jobs", type=int, default=8)
    a.add_argument("--timeout", type=int, default=300, help="seconds per capture")
    a.add_argument("--python", help="the Python that runs the captures (default: this one)")
    a.add_argument("--zoo", action="store_true", help="then trainsim_capture.hf_zoo into STAGE/zoo")
    a = sub.add_parser("summary")
    a.add_argument("stage")
    a = sub.add_parser("list")
    a.add_argument("--dry-run", action="store_true")
    a = sub.add_parser("collect")
    a.add_argument("dest")
    a.add_argument("stages", nargs="+", help="unpacked captured_models/ folders, earlier sessions first")
    a.add_argument("--profile", help="the machine's profile (trainsim-calibrate's profile.json, renamed)")
    args = p.parse_args(argv)
    if args.cmd == "list":
        for r in all_runs(args.dry_run):
            print(r["name"])
        return 0
    return {"prepare": cmd_prepare, "run": cmd_run, "fail": cmd_fail, "captures": cmd_captures,
            "summary": cmd_summary, "collect": cmd_collect}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
