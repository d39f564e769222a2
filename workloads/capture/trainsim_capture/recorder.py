"""The TorchDispatchMode that records one training step's ATen ops and the memory they use.

Identity of memory: a *buffer* is one storage (an allocation). Tensors are mapped to buffers by
their storage's identity (`untyped_storage()._cdata`, the StorageImpl, which fake tensors have
too); views, in-place results and `detach` aliases share their input's buffer. A buffer is
allocated by the op whose output first shows a storage not alive before, and freed when the last
Python tensor object on it dies: every tensor the mode sees gets a `weakref.finalize`, and a
tensor's Python object lives exactly as long as its TensorImpl (PyTorch keeps the PyObject of a
tensor that C++ still holds), so autograd's saved tensors, the autocast cache, `.grad` and
optimizer states keep their buffers alive as they do on a GPU. Saved tensors are seen through
`torch.autograd.graph.saved_tensors_hooks` (whose pack hook keeps the tensor itself, so the
lifetime is the one autograd gives it). The garbage collector is off while recording, so frees
happen at deterministic points; buffers only a collection frees are freed at the end of the step
and flagged (`freed_by_gc`).
"""
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import compat
from .opinfo import TORCH_DTYPE_NAMES, base_name, HIDDEN_ALIAS_OPS

_PRIM_DEVICE = None


def dtype_name(dt):
    return TORCH_DTYPE_NAMES.get(str(dt), str(dt).replace("torch.", ""))


def storage_key(t):
    try:
        return t.untyped_storage()._cdata
    except Exception:
        pass
    try:
        return t.storage()._cdata
    except Exception:
        return None


def storage_nbytes(t):
    try:
        return int(t.untyped_storage().nbytes())
    except Exception:
        pass
    try:
        return int(t.storage().nbytes())
    except Exception:
        return None


class Buffer:
    __slots__ = ("id", "key", "nbytes", "dtype", "device", "alloc", "free", "refs", "saved", "producer",
                 "out_pos", "kind", "param", "cast_of", "freed_by_gc", "first_use", "free_g", "layout")

    def __init__(self, bid, key, nbytes, dtype, device):
        self.id = bid
        self.key = key
        self.nbytes = nbytes
        self.dtype = dtype
        self.device = device
        self.alloc = None      # (occ, idx) of the op that allocated it; None: existed before
        self.free = None       # (occ, idx-after) when freed; None: alive at the end
        self.refs = 0
        self.saved = []        # (occ, idx) of saved-for-backward packs
        self.producer = None   # global op index
        self.out_pos = None    # (global op index, output position) whose layout defines its size
        self.kind = "activation"
        self.param = None
        self.cast_of = None    # buffer id of the parameter this buffer is a dtype cast of
        self.freed_by_gc = False
        self.first_use = None
        self.free_g = None     # global index of the op after which it was freed
        self.layout = None     # shape/stride/offset of the tensor that defines a pre-existing buffer


class Recorder(TorchDispatchMode):
    """Records ops while active; the driver moves `occ` (the phase occurrence) between regions."""

    def __init__(self, model_device_type):
        super().__init__()
        self.model_device_type = model_device_type
        self.occ = ("setup", None)
        self.occ_counts = {}
        self.ops = []
        self.buffers = []
        self.live = {}          # storage key -> buffer id
        self.tracked = {}       # id(tensor) -> buffer id
        self._finalizers = []
        self.closed = False
        self.paused = 0
        self.module_stack = []
        self.in_backward = False
        self.cpu_work = False   # optimizer offload: CPU ops are real work, not host bookkeeping
        self.param_names = {}   # storage key -> parameter name (set by the driver)
        self.notes = set()
        self.timings = []
        self.node_name = compat.current_autograd_node_name

    # positions ------------------------------------------------------------------------------
    def set_occ(self, kind, layer=None):
        self.occ = (kind, layer)

    def position(self):
        """Where a free or a pack happens: after the last op recorded (in that op's occurrence),
        which stays unambiguous when a checkpointed layer's recompute interleaves with its backward."""
        if not self.ops:
            return (("embed.forward", None), -1)
        last = self.ops[-1]
        return (last["occ"], last["idx"])

    # tensors and buffers ----------------------------------------------------------------------
    def buffer_of(self, t):
        key = storage_key(t)
        bid = self.live.get(key)
        return self.buffers[bid] if bid is not None else None

    def _new_buffer(self, t, key):
        nb = storage_nbytes(t)
        if nb is None:
            nb = t.numel() * t.element_size()
        buf = Buffer(len(self.buffers), key, nb, dtype_name(t.dtype), t.device.type)
        self.buffers.append(buf)
        if key is not None:
            self.live[key] = buf.id
        return buf

    def track(self, t, buf=None):
        """Maps tensor t to its buffer (creating an 'existing' buffer for an unseen storage)."""
        tid = id(t)
        if tid in self.tracked:
            return self.buffers[self.tracked[tid]]
        key = storage_key(t)
        if buf is None:
            bid = self.live.get(key)
            if bid is None:
                buf = self._new_buffer(t, key)
                buf.layout = self._meta(t, buf)
                pname = self.param_names.get(key)
                if pname is not None:
                    buf.kind = "param"
                    buf.param = pname
                else:
                    buf.kind = "existing"
            else:
                buf = self.buffers[bid]
        self.tracked[tid] = buf.id
        buf.refs += 1
        f = weakref.finalize(t, self._on_dead, tid, buf.id)
        f.atexit = False
        return buf

    def _on_dead(self, tid, bid):
        if self.closed:
            return
        self.tracked.pop(tid, None)
        buf = self.buffers[bid]
        buf.refs -= 1
        if buf.refs == 0 and buf.free is None:
            buf.free = self.position()
            buf.free_g = len(self.ops) - 1
            if self.live.get(buf.key) == bid:
                del self.live[buf.key]

    def close(self):
        self.closed = True

    # saved tensors ------------------------------------------------------------------------------
    def pack(self, t):
        if isinstance(t, torch.Tensor) and not self.paused:
            buf = self.track(t)
            buf.saved.append(self.position())
        return t

    @staticmethod
    def unpack(t):
        return t

    # dispatch -----------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        ns = schema.name.split("::", 1)[0]
        if self.paused or ns not in ("aten", "prims"):
            return func(*args, **kwargs)
        name = f"{schema.name}.{func._overloadname}"
        if name == "prims::device.default" or base_name(name) in ("size", "stride", "sym_size", "sym_stride",
                                                                    "sym_numel", "sym_storage_offset", "dim"):
            return func(*args, **kwargs)

        # flatten tensor arguments in schema order; lists keep their member indices
        ins, lists, mutated, scalars = [], [], [], {}
        bound = _bind(schema, args, kwargs)
        for arg, val in bound:
            is_write = arg.alias_info is not None and arg.alias_info.is_write
            if isinstance(val, torch.Tensor):
                if is_write:
                    mutated.append(len(ins))
                ins.append(val)
            elif isinstance(val, (list, tuple)) and val and any(isinstance(v, torch.Tensor) for v in val):
                members = []
                for v in val:
                    if isinstance(v, torch.Tensor):
                        if is_write:
                            mutated.append(len(ins))
                        members.append(len(ins))
                        ins.append(v)
                lists.append(members)
            elif arg.name in ("is_causal", "dropout_p", "scale", "causal", "reduction", "ignore_index",
                              "return_debug_mask", "compute_log_sumexp", "dim", "keepdim", "enable_gqa"):
                if isinstance(val, (bool, int, float)) or val is None:
                    scalars[arg.name] = val
                elif isinstance(val, (list, tuple)) and all(isinstance(x, int) for x in val):
                    scalars[arg.name] = list(val)
        in_bufs = [self.track(t) for t in ins]
        in_meta = [self._meta(t, b) for t, b in zip(ins, in_bufs)]
        in_keys = {b.key for b in in_bufs}

        token = self.before_call()
        handled, out = compat.foreach_shim(func, args, kwargs)
        if not handled:
            out = func(*args, **kwargs)
        self.after_call(token)

        outs = _flatten_out(out)
        gidx = len(self.ops)
        occ = self.occ
        idx = self.occ_counts.get(occ, 0)
        self.occ_counts[occ] = idx + 1
        out_meta, out_fresh = [], []
        hidden_alias = base_name(name) in HIDDEN_ALIAS_OPS
        for pos, o in enumerate(outs):
            key = storage_key(o)
            bid = self.live.get(key)
            if bid is None and id(o) not in self.tracked:
                buf = self._new_buffer(o, key)
                buf.alloc = (occ, idx)
                buf.producer = gidx
                buf.out_pos = (gidx, pos)
                self.track(o, buf)
                out_fresh.append(True)
                if base_name(name) == "_to_copy" and in_bufs and in_bufs[0].kind == "param":
                    buf.cast_of = in_bufs[0].id
            else:
                buf = self.track(o)
                fresh = buf.producer == gidx
                out_fresh.append(fresh)
                if not fresh and buf.key not in in_keys and not hidden_alias:
                    self.notes.add(f"{name} returned memory of a buffer that is not among its inputs")
            out_meta.append(self._meta(o, buf))

        tensors = ins + outs
        devs = {t.device.type for t in tensors}
        host = False
        if devs and devs == {"cpu"} and self.model_device_type != "cpu" and not self.cpu_work:
            host = True
        rec = {
            "op": name, "occ": occ, "idx": idx, "in": in_meta, "out": out_meta, "out_fresh": out_fresh,
            "mutated": mutated, "lists": lists, "scalars": scalars, "host": host,
            "stream": "cpu" if (devs == {"cpu"} and self.model_device_type != "cpu") else "compute",
            "all_views": bool(outs) and not mutated and not any(out_fresh),
            "pointwise": compat.is_pointwise(func),
            "module": self.module_stack[-1] if self.module_stack else None,
            "node": self.node_name() if self.in_backward else None,
        }
        self.ops.append(rec)
        if token is not None:
            self.timings.append((gidx, token))
        for b in in_bufs:
            if b.first_use is None:
                b.first_use = (occ, idx)
        return out

    def before_call(self):
        return None

    def after_call(self, token):
        pass

    def _meta(self, t, buf):
        return {
            "buf": buf.id, "dtype": dtype_name(t.dtype), "shape": [int(x) for x in t.shape],
            "stride": [int(x) for x in t.stride()], "offset": int(t.storage_offset()), "device": t.device.type,
        }


def _bind(schema, args, kwargs):
    out = []
    for i, arg in enumerate(schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            out.append((arg, args[i]))
        elif arg.name in kwargs:
            out.append((arg, kwargs[arg.name]))
    return out


def _flatten_out(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        r = []
        for o in out:
            r.extend(_flatten_out(o))
        return r
    return []
