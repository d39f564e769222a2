"""Runs one training step of a model under fake tensors and the recorder, phase by phase.

The model is built with a few layers (`Built.layers`, usually 3: the middle one is the
representative, whose neighbours are layers on both sides); the full model's layer count is
metadata. Regions:
  embed.forward   from the step's start to the first layer's forward
  layer.forward i each layer's forward (its `forward` is wrapped; with checkpointing the wrapper
                  runs inside torch.utils.checkpoint, so the recompute is marked too)
  head.forward    after the last layer: final norm, LM head, loss (autocast exits at its end)
  head.backward   from loss.backward() until the gradient of the last layer's output is complete
  layer.backward i from the gradient of layer i's output to that of its input (tensor hooks)
  layer.recompute i the wrapper re-entered during the backward (checkpointing)
  embed.backward  after the first layer's input gradient
  optimizer.first the first optimizer step (creates the states; not emitted as ops)
  optimizer       a second, steady-state step, then zero_grad(set_to_none=True)
"""
import gc

import torch

from . import compat
from .recorder import Recorder


class RunSpec:
    PRECISIONS = ("fp32", "bf16", "autocast-bf16", "fp16-scaler")
    OPTIMIZERS = ("adamw-fused", "adamw-foreach", "adamw-forloop", "none")

    def __init__(self, micro_batch, seq, precision="autocast-bf16", recompute=False, optimizer="adamw-foreach",
                 optimizer_device="gpu", device=None, sdpa="auto"):
        if precision not in self.PRECISIONS:
            raise ValueError(f"precision {precision!r}: expected one of {', '.join(self.PRECISIONS)}")
        if optimizer not in self.OPTIMIZERS:
            raise ValueError(f"optimizer {optimizer!r}: expected one of {', '.join(self.OPTIMIZERS)}")
        if optimizer_device not in ("gpu", "cpu"):
            raise ValueError(f"optimizer device {optimizer_device!r}: expected gpu or cpu")
        self.micro_batch = int(micro_batch)
        self.seq = int(seq)
        self.precision = precision
        self.recompute = bool(recompute)
        self.optimizer = optimizer
        self.optimizer_device = optimizer_device
        self.device = device or compat.default_device()
        self.sdpa = sdpa

    def with_dims(self, b, s):
        r = RunSpec(b, s, self.precision, self.recompute, self.optimizer, self.optimizer_device, self.device, self.sdpa)
        return r

    def describe(self):
        return {"micro_batch": self.micro_batch, "seq": self.seq, "precision": self.precision,
                "recompute": self.recompute, "optimizer": self.optimizer,
                "optimizer_device": self.optimizer_device, "device": self.device}


class Built:
    """What a model source hands the driver (models.py builds it under the fake mode)."""

    def __init__(self, model, layers, forward_loss, layer_kinds=None, layers_path=""):
        self.model = model
        self.layers = layers                # the nn.ModuleList of decoder layers (captured count)
        self.forward_loss = forward_loss    # (model, ids, targets) -> scalar loss
        self.layer_kinds = layer_kinds or ["decoder"] * len(layers)
        self.layers_path = layers_path      # e.g. "model.layers"


class Raw:
    """The recorder's result plus the structure the emitter needs."""

    def __init__(self, rec, built, run, params, optimizer_info, stand_ins):
        self.ops = rec.ops
        self.buffers = rec.buffers
        self.notes = sorted(rec.notes)
        self.layer_kinds = built.layer_kinds
        self.layers_path = built.layers_path
        self.run = run
        self.params = params
        self.optimizer = optimizer_info
        self.stand_ins = stand_ins
        self.timings = list(getattr(rec, "timings", []))


def _first_tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for v in x:
            t = _first_tensor(v)
            if t is not None:
                return t
    if isinstance(x, dict):
        for v in x.values():
            t = _first_tensor(v)
            if t is not None:
                return t
    if hasattr(x, "to_tuple"):  # transformers ModelOutput
        return _first_tensor(x.to_tuple())
    return None


def _wrap_layers(built, rec, run):
    n = len(built.layers)

    def after_forward(i):
        return ("layer.forward", i + 1) if i + 1 < n else ("head.forward", None)

    for i, layer in enumerate(built.layers):
        orig = layer.forward

        def region(*args, __i=i, __orig=orig, **kwargs):
            recomputing = rec.in_backward
            prev = rec.occ
            rec.set_occ("layer.recompute" if recomputing else "layer.forward", __i)
            try:
                out = __orig(*args, **kwargs)
            finally:
                rec.set_occ(*(prev if recomputing else after_forward(__i)))
            if not recomputing and torch.is_grad_enabled():
                x = _first_tensor((args, kwargs))
                y = _first_tensor(out)
                if y is not None and y.requires_grad:
                    y.register_hook(lambda g, __i=__i: rec.set_occ("layer.backward", __i))
                if x is not None and x.requires_grad:
                    nxt = ("layer.backward", __i - 1) if __i > 0 else ("embed.backward", None)
                    x.register_hook(lambda g, __n=nxt: rec.set_occ(*__n))
            return out

        if run.recompute:
            def fwd(*args, __region=region, **kwargs):
                return compat.checkpoint(__region, *args, **kwargs)
        else:
            fwd = region
        layer.forward = fwd


def _module_hooks(model, rec, built):
    prefix = built.layers_path + "."
    handles = []
    for name, mod in model.named_modules():
        if not name:
            continue
        rel = name
        if name.startswith(prefix):
            rest = name[len(prefix):]
            parts = rest.split(".", 1)
            rel = parts[1] if len(parts) > 1 else ""
            if not rel:
                continue

        def pre(m, inp, __n=rel):
            rec.module_stack.append(__n)

        def post(m, inp, out, __n=rel):
            if rec.module_stack and rec.module_stack[-1] == __n:
                rec.module_stack.pop()

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    return handles


def make_optimizer(params, kind):
    if kind == "none":
        return None
    kw = {"lr": 1e-4, "weight_decay": 0.1}
    if kind == "adamw-fused":
        kw["fused"] = True
    elif kind == "adamw-foreach":
        kw["foreach"] = True
    else:
        kw["foreach"] = False
    return torch.optim.AdamW(params, **kw)


def _default_device(dev):
    """Builds the model on its device from the start where this PyTorch can (torch.device as a
    context manager, 2.0 on): a fake parameter moved across devices afterwards needs a tensor swap."""
    import contextlib as _cl
    return dev if hasattr(dev, "__enter__") else _cl.nullcontext()


def _place(model, dev, dtype):
    """model.to(device=dev, dtype=dtype) without nn.Module._apply: on PyTorch 2.x that swaps each fake
    parameter with its converted copy (torch.utils.swap_tensors), which refuses tensors with weak
    references (\"_apply(): Couldn't swap Embedding.weight\"). Each parameter or buffer not already on
    `dev` in `dtype` (floating ones only) is replaced by its converted copy, once: tied weights stay
    one Parameter."""
    done = {}
    for module in model.modules():
        for table in (module._parameters, module._buffers):
            for name, t in list(table.items()):
                if t is None:
                    continue
                want = dtype if dtype is not None and t.is_floating_point() else t.dtype
                if t.device == dev and t.dtype == want:
                    continue
                if id(t) not in done:
                    with torch.no_grad():
                        moved = t.detach().to(device=dev, dtype=want)
                    if isinstance(t, torch.nn.Parameter):
                        moved = torch.nn.Parameter(moved, requires_grad=t.requires_grad)
                    done[id(t)] = moved
                table[name] = done[id(t)]
    return model


def record_step(build, run, recorder_cls=Recorder, real=False, vocab=None, warmup=0):
    """build(): returns a Built (called inside the fake mode). Returns a Raw.

    real=True (the --time mode, untested without a GPU): no fake mode, a real model on the GPU,
    token ids drawn below `vocab`, `warmup` untimed steps first."""
    stand_ins = []
    import contextlib as _cl
    fake = compat.make_fake_mode() if not real else _cl.nullcontext()
    dev = torch.device(f"{run.device}:0" if run.device == "cuda" else run.device)
    pdtype = torch.bfloat16 if run.precision == "bf16" else torch.float32
    gc_was = gc.isenabled()
    gc.collect()
    gc.disable()
    rec = recorder_cls(run.device)
    compat.SDPA_POLICY["mode"] = run.sdpa
    try:
        with fake, compat.sdpa_installed(), compat.no_profiler_ranges(), compat.fallback_watch(rec.notes):
            with _default_device(dev):
                built = build()
            model = _place(built.model, dev, None if getattr(built, "dtype_applied", False) else pdtype)
            model.train()
            named = list(model.named_parameters())
            params = [p for _, p in named]
            rec.param_names = {}
            from .recorder import storage_key
            for pname, p in named:
                rec.param_names[storage_key(p)] = pname
            if real:
                ids = torch.randint(0, vocab, (run.micro_batch, run.seq), device=dev)
                targets = torch.randint(0, vocab, (run.micro_batch, run.seq), device=dev)
            else:
                ids = torch.empty(run.micro_batch, run.seq, dtype=torch.long, device=dev)
                targets = torch.empty(run.micro_batch, run.seq, dtype=torch.long, device=dev)
            opt_params = params
            if run.optimizer_device == "cpu":
                opt_params = None  # made after the backward
            _wrap_layers(built, rec, run)
            handles = _module_hooks(model, rec, built)
            scaler = compat.grad_scaler(run.device) if run.precision == "fp16-scaler" else None
            for _ in range(warmup if real else 0):
                # untimed forward/backward passes (cuBLAS handles, allocator, autotuning) before the
                # recorded step; the recorded step's first optimizer step is not the measured one
                _warm = _autocast_ctx(run)
                with _warm:
                    wl = built.forward_loss(model, ids, targets)
                (scaler.scale(wl) if scaler is not None else wl).backward()
                del wl
                for p in params:
                    p.grad = None
            with rec, torch.autograd.graph.saved_tensors_hooks(rec.pack, rec.unpack):
                # parameters, buffers and inputs exist before the step
                for pname, p in named:
                    rec.track(p)
                for bname, bt in model.named_buffers():
                    b = rec.track(bt)
                    if b.kind == "existing":
                        b.kind = "model_buffer"
                        b.param = bname
                for t in (ids, targets):
                    rec.track(t).kind = "input"
                rec.set_occ("embed.forward")
                if run.precision in ("autocast-bf16", "fp16-scaler"):
                    adt = torch.bfloat16 if run.precision == "autocast-bf16" else torch.float16
                    with compat.autocast(run.device, adt):
                        loss = built.forward_loss(model, ids, targets)
                else:
                    loss = built.forward_loss(model, ids, targets)
                if scaler is not None:
                    loss = scaler.scale(loss)
                rec.set_occ("head.backward")
                rec.in_backward = True
                loss.backward()
                rec.in_backward = False
                del loss
                for pname, p in named:
                    if p.grad is not None:
                        g = rec.buffer_of(p.grad)
                        if g is not None:
                            g.kind, g.param = "grad", pname
                rec.module_stack.clear()
                opt_info = {"kind": run.optimizer, "device": run.optimizer_device}
                if run.optimizer != "none":
                    if run.optimizer_device == "cpu":
                        rec.paused += 1
                        cpu_params = []
                        for p in params:
                            q = torch.empty_strided(tuple(p.shape), tuple(p.stride()), dtype=torch.float32,
                                                    device="cpu").requires_grad_(True)
                            q.grad = torch.empty_strided(tuple(p.shape), tuple(p.stride()), dtype=torch.float32,
                                                         device="cpu")
                            cpu_params.append(q)
                        rec.paused -= 1
                        for (pname, _), q in zip(named, cpu_params):
                            b = rec.track(q)
                            b.kind, b.param = "param_host", pname
                            g = rec.track(q.grad)
                            g.kind, g.param = "grad_host", pname
                        rec.cpu_work = True
                        opt_params = cpu_params
                        stand_ins.append("optimizer on the host: fp32 parameters and gradients on the CPU "
                                         "(the device-to-host gradient copies are the training stack's)")
                    opt = make_optimizer(opt_params, run.optimizer)
                    for step_occ in ("optimizer.first", "optimizer"):
                        rec.set_occ(step_occ)
                        if scaler is not None:
                            # GradScaler.step reads found_inf with .item(), which fake tensors cannot
                            # answer: the step is taken as if no inf/NaN was found (stand-in).
                            scaler.unscale_(opt)
                            opt.step()
                            scaler.update()
                        else:
                            opt.step()
                    opt_info["states"] = _optimizer_states(opt, opt_params, named, rec)
                    opt.zero_grad(set_to_none=True)
                    if run.optimizer_device == "cpu":
                        for p in params:
                            p.grad = None
                    if scaler is not None:
                        stand_ins.append("GradScaler: found_inf taken as 0 (no skipped step); unscale_ as its own "
                                         "foreach pass before the optimizer step")
                else:
                    rec.set_occ("optimizer")
                    for p in params:
                        p.grad = None
                param_info = _param_info(named, rec, model)
                rec.set_occ("end")
            for h in handles:
                h.remove()
            del opt_params
        gc.collect()
        for b in rec.buffers:
            if b.free is None and b.refs == 0:
                b.freed_by_gc = True
    finally:
        rec.close()
        if gc_was:
            gc.enable()
    return Raw(rec, built, run, param_info, opt_info, stand_ins)


def _autocast_ctx(run):
    import contextlib as _cl
    if run.precision in ("autocast-bf16", "fp16-scaler"):
        return compat.autocast(run.device, torch.bfloat16 if run.precision == "autocast-bf16" else torch.float16)
    return _cl.nullcontext()


def _optimizer_states(opt, opt_params, named, rec):
    out = []
    names = {id(p): n for (n, _), p in zip(named, opt_params)}
    for p in opt_params:
        st = opt.state.get(p, {})
        for k in sorted(st):
            v = st[k]
            if isinstance(v, torch.Tensor):
                b = rec.buffer_of(v)
                if b is None:
                    continue
                b.kind = "optimizer_state"
                b.param = f"{names[id(p)]}:{k}"
                out.append({"param": names[id(p)], "state": k, "buf": b.id})
    return out


def _param_info(named, rec, model):
    types = {n: type(m).__name__ for n, m in model.named_modules()}
    out = []
    for n, p in named:
        b = rec.buffer_of(p)
        mod = n.rsplit(".", 1)[0] if "." in n else ""
        out.append({"name": n, "buf": b.id if b else None, "shape": list(p.shape), "dtype": str(p.dtype),
                    "module_type": types.get(mod, "")})
    return out
