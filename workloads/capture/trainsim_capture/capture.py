"""One capture: record the step at the requested size and at three generic sizes, match every
dimension to an expression, and assemble the document (SCHEMA.md)."""
import platform

import torch

from . import __version__, SCHEMA_VERSION
from .analyze import analyze, END_PHASES, LAYER_PHASES
from .emit import (collect, slot_values, layout_slots, assign_polys, literal_polys, finalize_op, finalize_buffer, strip_private,
                   PHASE_NAMES, ALLOC_BLOCK)
from .errors import CaptureError
from .opinfo import OP_CLASSES
from .step import record_step
from .symbols import Matcher, SymbolError


def _record(source, values, kinds, run):
    r = run.with_dims(values["b"], values["s"])
    with source.patches():
        return record_step(lambda: source.build(values, kinds), r)


def _signature(c):
    """Everything but the integers: two captures of one architecture at two sizes must agree."""
    sig = []
    for ph in END_PHASES:
        sig.append((ph, [_op_sig(e) for e in c.phases[ph]]))
    for L in c.layers:
        for ph in LAYER_PHASES:
            sig.append((L["kind"], ph, L["recompute_at"], [_op_sig(e) for e in L[ph]]))
    for seg in c.opt_segments:
        sig.append(("opt", seg["group"], [[_op_sig(e) for e in body] for body in seg["_bodies"]]))
    for b in c.buffers:
        sig.append(("buf", b["id"], b["kind"], b["dtype"], str(b.get("alloc")), str(b.get("free")),
                    str(b.get("free_first")), str(b.get("free_last")), len(b.get("saved", []))))
    return sig


def _op_sig(e):
    return (e["op"], e["class"], tuple((t["buf"], t["dtype"], len(t["shape"])) for t in e["in"] + e["out"]),
            tuple(len(L["members"]) for L in e.get("lists", [])))


def _first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"entry {i}: {str(x)[:300]} against {str(y)[:300]}"
    return f"lengths {len(a)} against {len(b)}"


def capture(source, run, symbolic=True, progress=None):
    """Returns the capture document (a dict)."""
    say = progress or (lambda *_: None)
    if hasattr(source, "prepare"):
        source.prepare(run)
    values_t = source.target_values(run)
    kinds = source.capture_kinds()
    say(f"capturing {source.name} at {values_t}")
    raw_t = _record(source, values_t, kinds, run)
    c_t = collect(analyze(raw_t))
    space = None
    if symbolic:
        # (head_dim = hidden / heads, symbols equal at the requested size tied): the first that scales
        attempts = [(False, False)]
        if getattr(source, "head_dim_free", False):
            attempts.append((True, False))
        if source.space(values_t).tie_equal(values_t) is not None:
            attempts.append((attempts[-1][0], True))
        last_err = None
        for tied, tie_equal in attempts:
            if tied and not getattr(source, "force_tied", False):
                source.force_tied = True
                say("head_dim independent of hidden did not work; retrying with head_dim = hidden / heads")
            try:
                space = source.space(values_t)
                if tie_equal:
                    space = space.tie_equal(values_t)
                    say(f"retrying with the symbols equal at the requested size tied: {space.ties}")
                ov = source.generic_overrides(values_t)
                points = [space.generic_point(k, ov) for k in range(3)]
                cs = []
                for k, p in enumerate(points):
                    say(f"generic size {k + 1}/3: {p}")
                    cs.append(collect(analyze(_record(source, p, kinds, run))))
                sig_t = _signature(c_t)
                for k, c in enumerate(cs):
                    s = _signature(c)
                    if s != sig_t:
                        raise SymbolError(f"the op sequence at generic size {k + 1} differs from the requested "
                                          f"size's ({_first_difference(s, sig_t)}): this model does not run the "
                                          "same ops at every size, so the capture cannot be scaled by shape")
                vecs = [slot_values(c)[0] for c in cs]
                vt, labels = slot_values(c_t)
                ext = points + [space.complete({k: values_t[k] for k in values_t})]
                matcher = Matcher(space, ext)
                matcher_abc = Matcher(space, points)
                polys = []
                layouts = [layout_slots(c) for c in [c_t] + cs]
                deferred = []
                for i, col in enumerate(zip(*vecs, vt)):
                    kind_, pos = labels[i][1], labels[i]
                    if kind_ == "stride" and _size_one(layouts, pos):
                        # a size-1 dimension's stride carries no meaning, but PyTorch's value is
                        # still some expression: all four points, else those where the size is not
                        # 1, else the contiguous stride if it fits (below), else the value
                        try:
                            p = matcher.match(col, _label(layouts[0], pos))
                        except SymbolError:
                            p = _match_stride_of_size_one(matcher_abc, col, layouts, pos)
                        if p is None:
                            deferred.append((i, col))
                    else:
                        p = matcher.match(col, _label(layouts[0], pos))
                    polys.append(p)
                _resolve_deferred(polys, labels, deferred, ext)
                assign_polys(c_t, polys)
                last_err = None
                break
            except (SymbolError, CaptureError, RuntimeError, TypeError, ValueError, AttributeError, KeyError,
                    IndexError) as e:
                last_err = e
        if last_err is not None:
            if isinstance(last_err, SymbolError):
                raise CaptureError(f"{source.name}: {last_err}")
            raise last_err
    else:
        literal_polys(c_t)
    return assemble(c_t, source, run, values_t, space, raw_t, symbolic)


def _size_one(layouts, pos):
    n, kind_, i = pos
    return any(ls[n]["shape"][i] == 1 for ls in layouts)


def _match_stride_of_size_one(matcher, col, layouts, pos):
    n, _k, i = pos
    if all(ls[n]["shape"][i] != 1 for ls in layouts[1:]):
        try:
            return matcher.match(col[:3], _label(layouts[0], pos))
        except SymbolError:
            pass
    return None


def _resolve_deferred(polys, labels, deferred, points):
    """Strides of size-1 dimensions: the contiguous stride (next stride x next size) where it gives
    the captured values, else the captured value as a constant."""
    from .poly import Poly
    where = {lab: k for k, lab in enumerate(labels)}
    for i, col in reversed(deferred):
        n, _k, d = labels[i]
        nxt_stride = where.get((n, "stride", d + 1))
        nxt_size = where.get((n, "shape", d + 1))
        cand = Poly.const(1) if nxt_stride is None else None
        if nxt_stride is not None and polys[nxt_stride] is not None and polys[nxt_size] is not None:
            cand = polys[nxt_stride] * polys[nxt_size]
        if cand is not None and all(cand.evaluate(p) == v for p, v in zip(points, col)):
            polys[i] = cand
        else:
            polys[i] = Poly.const(col[-1])


def _label(layouts_t, pos):
    n, kind_, i = pos
    d = layouts_t[n]
    return f"{kind_}[{i}] of a tensor of shape {d['shape']}"


def _layer_counts(kinds_full):
    counts = {}
    for k in kinds_full:
        counts[k] = counts.get(k, 0) + 1
    return counts


def assemble(c, source, run, values_t, space, raw, symbolic):
    kinds_full = source.layer_kinds_full()
    counts = _layer_counts(kinds_full)
    doc = {"kind": "trainsim.capture", "schema_version": SCHEMA_VERSION}
    tv = None
    try:
        import transformers
        tv = transformers.__version__
    except ImportError:
        pass
    prov = {"tool": "trainsim_capture", "tool_version": __version__, "torch": torch.__version__,
            "transformers": tv, "python": platform.python_version(), "source": source.provenance(),
            "device_claimed": f"{run.device}:0" if run.device == "cuda" else run.device}
    doc["provenance"] = prov
    doc["run"] = dict(run.describe(), sdpa=run.sdpa)
    stand = list(raw.stand_ins) + list(source.stand_ins())
    stand.append("scaled_dot_product_attention backend by rule, not by the GPU: flash for fp16/bf16 without a "
                 "mask and head_dim <= 256; memory-efficient otherwise (PyTorch >= 2.0); SDPA's math path on 1.13")
    if run.device == "cpu":
        stand.append("fake tensors claim the CPU (no CUDA in this PyTorch build): CPU autocast op lists and CPU "
                      "kernel choices apply, not CUDA's")
    doc["stand_ins"] = sorted(set(stand))
    symbols = dict(sorted(values_t.items()))
    if space is not None:
        symbols = dict(sorted(space.complete({k: values_t[k] for k in values_t}).items()))
        for s in list(symbols):
            if symbols[s] is None:
                del symbols[s]
    if len(counts) == 1:
        symbols["L"] = len(kinds_full)
    else:
        for k, n in counts.items():
            symbols[f"L_{k}"] = n
        symbols["L"] = len(kinds_full)
    doc["symbols"] = symbols
    doc["symbol_space"] = space.describe() if space is not None else None
    doc["scalable"] = bool(symbolic)
    doc["model"] = {
        "layers": len(kinds_full),
        "layer_counts": dict(sorted(counts.items())),
        "layer_sequence": _rle(kinds_full),
        "captured_layers": len(c.sk.layer_kinds),
        "captured_kinds": list(c.sk.layer_kinds),
    }
    doc["op_classes"] = list(OP_CLASSES)
    doc["allocator"] = {"block_bytes": ALLOC_BLOCK}
    kind_seq = kinds_full

    doc["params"] = c.params
    phases = {}
    for ph in END_PHASES:
        phases[ph] = {"ops": [finalize_op(e, counts, kind_seq) for e in c.phases[ph]]}
    layers = []
    for L in c.layers:
        le = {"kind": L["kind"], "count": counts.get(L["kind"], 0), "captured_index": L["index"],
              "recompute_at": L["recompute_at"], "phases": {}}
        for ph in LAYER_PHASES:
            le["phases"][PHASE_NAMES[ph]] = {"ops": [finalize_op(e, counts, kind_seq) for e in L[ph]]}
        layers.append(le)
    segs = []
    for seg in c.opt_segments:
        if seg["group"] == "layers":
            s = {"group": "layers", "repeat": "layers",
                 "bodies": {k: {"ops": [finalize_op(e, counts, kind_seq) for e in v]} for k, v in seg["bodies"].items()}}
        else:
            s = {"group": seg["group"], "ops": [finalize_op(e, counts, kind_seq) for e in seg["ops"]]}
        segs.append(s)
    phases["optimizer"] = {"kind": run.optimizer, "device": run.optimizer_device, "segments": segs}
    doc["phases"] = phases
    doc["layers"] = layers
    doc["buffers"] = [finalize_buffer(b) for b in c.buffers]
    doc["notes"] = sorted(set(c.sk.notes))
    strip_private(doc)
    from .replay import replay, totals
    doc["totals"] = totals(doc)
    doc["memory"] = replay(doc)
    return doc


def _rle(seq):
    out = []
    for k in seq:
        if out and out[-1][0] == k:
            out[-1][1] += 1
        else:
            out.append([k, 1])
    return out
