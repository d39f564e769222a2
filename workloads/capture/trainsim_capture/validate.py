"""Strict self-check of a capture document against SCHEMA.md: every object's keys (required and
optional, nothing else), value types, op classes, expressions that parse and evaluate to the
recorded integers at the document's symbols, buffer references and positions that exist.
Returns a list of problems (empty: valid)."""
from .opinfo import OP_CLASSES
from .poly import parse

PHASES_ENDS = ("embed.forward", "head.forward", "head.backward", "embed.backward")
LAYER_PHASE_KEYS = {"layer.forward": "forward", "layer.recompute": "recompute", "layer.backward": "backward"}
BUFFER_KINDS = ("activation", "param", "grad", "optimizer_state", "model_buffer", "input", "existing",
                "param_host", "grad_host")
DTYPES = ("f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool", "c64", "c128",
          "f8e4m3", "f8e5m2")

TOP = {"kind", "schema_version", "provenance", "run", "stand_ins", "notes", "symbols", "symbol_space", "scalable",
       "model", "op_classes", "allocator", "params", "phases", "layers", "buffers", "totals", "memory"}
TOP_OPT = {"timing"}
OP_REQ = {"i", "op", "class", "stream", "kernels", "in", "out", "bytes_read", "bytes_written", "flops",
          "bytes_read_expr", "bytes_written_expr", "flops_expr"}
OP_OPT = {"module", "autograd_node", "mutates", "view", "gemm", "attention", "lists", "kernels_rule", "measured_us"}
TENSOR_REQ = {"buf", "dtype", "shape", "stride", "offset", "shape_expr", "stride_expr", "offset_expr"}
TENSOR_OPT = {"layer_offset", "layer_index", "device", "param", "group", "layer_kind"}
GEMM_REQ = {"m", "n", "k", "batch", "m_expr", "n_expr", "k_expr", "batch_expr", "dtype", "out_dtype", "layout",
            "cublas", "pass"}
GEMM_OPT = {"weight", "role", "tp"}
ATTN_REQ = {"b", "heads", "kv_heads", "s_q", "s_kv", "head_dim", "head_dim_v", "b_expr", "heads_expr",
            "kv_heads_expr", "s_q_expr", "s_kv_expr", "head_dim_expr", "head_dim_v_expr", "causal", "dropout",
            "backend", "dtype", "masked"}
BUF_REQ = {"id", "kind", "dtype", "bytes", "alloc_bytes", "alloc", "free", "owner"}
BUF_OPT = {"bytes_expr", "bytes_note", "layout", "of", "layer_kind", "free_first", "free_last", "saved", "per_layer",
           "per_repetition", "device", "freed_by_gc"}
POS_REQ = {"phase", "op"}
POS_OPT = {"layer_offset", "layer_index", "segment", "after"}
PARAM_REQ = {"name", "buf", "group", "shape", "shape_expr", "dtype", "module", "tp"}
PARAM_OPT = {"local", "layer_kind"}


class _V:
    def __init__(self, doc):
        self.doc = doc
        self.p = []
        self.sym = doc.get("symbols", {}) if isinstance(doc.get("symbols"), dict) else {}

    def err(self, where, msg):
        self.p.append(f"{where}: {msg}")

    def keys(self, obj, where, req, opt=()):
        if not isinstance(obj, dict):
            self.err(where, f"expected an object, got {type(obj).__name__}")
            return False
        missing = sorted(set(req) - set(obj))
        extra = sorted(set(obj) - set(req) - set(opt))
        if missing:
            self.err(where, f"missing keys {missing}")
        if extra:
            self.err(where, f"unknown keys {extra}")
        return not missing

    def integer(self, v, where, minimum=None):
        if not isinstance(v, int) or isinstance(v, bool):
            self.err(where, f"expected an integer, got {v!r}")
            return False
        if minimum is not None and v < minimum:
            self.err(where, f"expected >= {minimum}, got {v}")
        return True

    def expr(self, text, value, where):
        if not isinstance(text, str):
            self.err(where, f"expected an expression string, got {text!r}")
            return
        try:
            got = parse(text).evaluate(self.sym)
        except (ValueError, KeyError) as e:
            self.err(where, f"expression {text!r}: {e}")
            return
        if value is not None and got != value:
            self.err(where, f"expression {text!r} = {got} at the document's symbols, recorded {value}")


def validate(doc):
    v = _V(doc)
    if not v.keys(doc, "document", TOP, TOP_OPT):
        return v.p
    if doc["kind"] != "trainsim.capture":
        v.err("kind", f"expected 'trainsim.capture', got {doc['kind']!r}")
    if doc["schema_version"] != 1:
        v.err("schema_version", f"expected 1, got {doc['schema_version']!r}")
    v.keys(doc["provenance"], "provenance", {"tool", "tool_version", "torch", "transformers", "python", "source",
                                             "device_claimed"})
    v.keys(doc["run"], "run", {"micro_batch", "seq", "precision", "recompute", "optimizer", "optimizer_device",
                               "device", "sdpa"})
    for k, x in doc["symbols"].items():
        v.integer(x, f"symbols.{k}", 1)
    if doc["symbol_space"] is not None:
        v.keys(doc["symbol_space"], "symbol_space", {"independent", "ties", "fixed"})
    if not isinstance(doc["scalable"], bool):
        v.err("scalable", "expected a boolean")
    if list(doc["op_classes"]) != list(OP_CLASSES):
        v.err("op_classes", "not this schema's op classes")
    v.keys(doc["model"], "model", {"layers", "layer_counts", "layer_sequence", "captured_layers", "captured_kinds"})
    v.keys(doc["allocator"], "allocator", {"block_bytes"})
    buf_ids = set()
    for i, b in enumerate(doc["buffers"]):
        where = f"buffers[{i}]"
        if not v.keys(b, where, BUF_REQ, BUF_OPT):
            continue
        if b["id"] != i:
            v.err(where, f"id {b['id']} out of order")
        buf_ids.add(b["id"])
        if b["kind"] not in BUFFER_KINDS:
            v.err(where, f"kind {b['kind']!r} not one of {BUFFER_KINDS}")
        if b["dtype"] not in DTYPES:
            v.err(where, f"dtype {b['dtype']!r}")
        if b["owner"] not in ("layer", "ends", "optimizer"):
            v.err(where, f"owner {b['owner']!r}")
        if b["owner"] == "layer" and "layer_kind" not in b:
            v.err(where, "a layer's buffer needs layer_kind")
        v.integer(b["bytes"], where + ".bytes", 0)
        v.integer(b["alloc_bytes"], where + ".alloc_bytes", 0)
        if b["alloc_bytes"] != (0 if b["bytes"] == 0 else -(-b["bytes"] // doc["allocator"]["block_bytes"])
                                * doc["allocator"]["block_bytes"]):
            v.err(where, "alloc_bytes is not bytes rounded up to the allocator's block")
        if doc["scalable"] and b.get("bytes_expr") is not None:
            v.expr(b["bytes_expr"], b["bytes"], where + ".bytes_expr")
        if "layout" in b:
            lay = b["layout"]
            if v.keys(lay, where + ".layout", {"shape", "stride", "offset", "dtype", "shape_expr", "stride_expr",
                                               "offset_expr"}):
                _tensor_exprs(v, lay, where + ".layout")
        for key in ("alloc", "free", "free_first", "free_last"):
            if b.get(key) is not None:
                _pos(v, b[key], f"{where}.{key}")
        for j, s in enumerate(b.get("saved", [])):
            _pos(v, s, f"{where}.saved[{j}]")
    for i, p in enumerate(doc["params"]):
        where = f"params[{i}]"
        if v.keys(p, where, PARAM_REQ, PARAM_OPT):
            if p["buf"] not in buf_ids:
                v.err(where, f"buf {p['buf']} is no buffer")
            for j, (s, e) in enumerate(zip(p["shape"], p["shape_expr"])):
                v.expr(e, s, f"{where}.shape_expr[{j}]")
            if p["tp"] not in ("column", "row", "vocab", "replicated"):
                v.err(where, f"tp {p['tp']!r}")
    phases = doc["phases"]
    v.keys(phases, "phases", set(PHASES_ENDS) | {"optimizer"})
    for ph in PHASES_ENDS:
        if ph in phases and v.keys(phases[ph], f"phases.{ph}", {"ops"}):
            _ops(v, phases[ph]["ops"], f"phases.{ph}", buf_ids)
    opt = phases.get("optimizer")
    if opt is not None and v.keys(opt, "phases.optimizer", {"kind", "device", "segments"}):
        for s, seg in enumerate(opt["segments"]):
            where = f"phases.optimizer.segments[{s}]"
            if seg.get("group") == "layers":
                if v.keys(seg, where, {"group", "repeat", "bodies"}):
                    for k, body in seg["bodies"].items():
                        if v.keys(body, f"{where}.bodies.{k}", {"ops"}):
                            _ops(v, body["ops"], f"{where}.bodies.{k}", buf_ids)
            elif v.keys(seg, where, {"group", "ops"}):
                if seg["group"] not in ("all", "ends"):
                    v.err(where, f"group {seg['group']!r}")
                _ops(v, seg["ops"], where, buf_ids)
    for i, L in enumerate(doc["layers"]):
        where = f"layers[{i}]"
        if v.keys(L, where, {"kind", "count", "captured_index", "recompute_at", "phases"}):
            if v.keys(L["phases"], where + ".phases", {"forward", "recompute", "backward"}):
                for k, ph in L["phases"].items():
                    if v.keys(ph, f"{where}.phases.{k}", {"ops"}):
                        _ops(v, ph["ops"], f"{where}.phases.{k}", buf_ids)
    v.keys(doc["memory"], "memory", {"layers", "base_bytes", "peak_bytes", "peak_at", "end_bytes", "unplaced_buffers"})
    v.keys(doc["totals"], "totals", {"ends", "layers", "optimizer", "step"})
    return v.p


def _tensor_exprs(v, t, where):
    if len(t["shape"]) != len(t["shape_expr"]) or len(t["stride"]) != len(t["stride_expr"]):
        v.err(where, "shape/stride and their expressions differ in length")
        return
    for j, (s, e) in enumerate(zip(t["shape"], t["shape_expr"])):
        v.expr(e, s, f"{where}.shape_expr[{j}]")
    for j, (s, e) in enumerate(zip(t["stride"], t["stride_expr"])):
        if t["shape"][j] != 1:
            v.expr(e, s, f"{where}.stride_expr[{j}]")
    v.expr(t["offset_expr"], t["offset"], where + ".offset_expr")
    if t["dtype"] not in DTYPES:
        v.err(where, f"dtype {t['dtype']!r}")


def _pos(v, pos, where):
    if not v.keys(pos, where, POS_REQ, POS_OPT):
        return
    ph = pos["phase"]
    ok = ph in PHASES_ENDS or ph in LAYER_PHASE_KEYS or ph == "optimizer"
    if not ok:
        v.err(where, f"phase {ph!r}")
        return
    if not isinstance(pos["op"], int) or pos["op"] < -1:
        v.err(where, f"op {pos['op']!r}")
        return
    doc = v.doc
    if ph in PHASES_ENDS:
        n = len(doc["phases"][ph]["ops"])
    elif ph == "optimizer":
        segs = doc["phases"]["optimizer"]["segments"]
        s = pos.get("segment")
        if not isinstance(s, int) or not 0 <= s < len(segs):
            v.err(where, f"segment {s!r}")
            return
        seg = segs[s]
        n = max((len(b["ops"]) for b in seg["bodies"].values()), default=0) if "bodies" in seg else len(seg["ops"])
    else:
        n = max(len(L["phases"][LAYER_PHASE_KEYS[ph]]["ops"]) for L in doc["layers"]) if doc["layers"] else 0
    if pos["op"] >= n:
        v.err(where, f"op {pos['op']} beyond the phase's {n} ops")


def _ops(v, ops, where, buf_ids):
    for j, o in enumerate(ops):
        w = f"{where}.ops[{j}]"
        if not v.keys(o, w, OP_REQ, OP_OPT):
            continue
        if o["class"] not in OP_CLASSES:
            v.err(w, f"class {o['class']!r}")
        if not isinstance(o["op"], str) or "::" not in o["op"]:
            v.err(w, f"op {o['op']!r}")
        v.integer(o["kernels"], w + ".kernels", 0)
        if o["class"] in ("view", "alloc") and (o["kernels"] or o["bytes_read"] or o["bytes_written"]):
            v.err(w, "a view or an allocation launches no kernel and moves no bytes")
        if o["stream"] not in ("compute", "cpu"):
            v.err(w, f"stream {o['stream']!r}")
        for k in ("bytes_read", "bytes_written", "flops"):
            v.integer(o[k], f"{w}.{k}", 0)
            v.expr(o[k + "_expr"], o[k] if "lists" not in o else None, f"{w}.{k}_expr")
        for side in ("in", "out"):
            for n, t in enumerate(o[side]):
                tw = f"{w}.{side}[{n}]"
                if v.keys(t, tw, TENSOR_REQ, TENSOR_OPT):
                    if t["buf"] not in buf_ids:
                        v.err(tw, f"buf {t['buf']} is no buffer")
                    _tensor_exprs(v, t, tw)
        if "gemm" in o:
            g = o["gemm"]
            if v.keys(g, w + ".gemm", GEMM_REQ, GEMM_OPT):
                for k in ("m", "n", "k", "batch"):
                    v.expr(g[k + "_expr"], g[k], f"{w}.gemm.{k}_expr")
                if g["pass"] not in ("fwd", "dgrad", "wgrad", "activation"):
                    v.err(w + ".gemm", f"pass {g['pass']!r}")
        if "attention" in o:
            a = o["attention"]
            if v.keys(a, w + ".attention", ATTN_REQ):
                for k in ("b", "heads", "kv_heads", "s_q", "s_kv", "head_dim", "head_dim_v"):
                    v.expr(a[k + "_expr"], a[k], f"{w}.attention.{k}_expr")
        for n, L in enumerate(o.get("lists", [])):
            lw = f"{w}.lists[{n}]"
            if v.keys(L, lw, {"role", "dtype", "mutated", "members"}, {"output"}):
                for m, t in enumerate(L["members"]):
                    if v.keys(t, f"{lw}.members[{m}]", TENSOR_REQ | {"param", "group"}, TENSOR_OPT):
                        if t["buf"] not in buf_ids:
                            v.err(f"{lw}.members[{m}]", f"buf {t['buf']} is no buffer")
