"""scale(capture, new symbol values): the capture of another size of the same architecture, by
evaluating its expressions (what the C++ loader mirrors; SCHEMA.md, "Scaling").

Only the capture's independent symbols (and L, the layer count) may be given; tied symbols follow
(a = kv*g, h = a*d where the architecture ties them) and fixed ones (a size-1 dimension at capture
time: b = 1, kv = 1) cannot change."""
import copy

from .emit import round_alloc, list_op_kernels
from .poly import parse
from .replay import replay, totals, expand_kinds
from .symbols import SymbolSpace


class ScaleError(Exception):
    pass


def new_symbols(doc, changes):
    if not doc.get("scalable"):
        raise ScaleError("this capture was made without symbols (--no-symbols): it does not scale")
    sp = doc["symbol_space"]
    space = SymbolSpace(sp["independent"], sp["ties"], sp["fixed"])
    cur = doc["symbols"]
    indep = {s: cur[s] for s in sp["independent"]}
    for k, v in changes.items():
        if k == "L" or k.startswith("L_"):
            continue
        if k in sp["fixed"]:
            if v != sp["fixed"][k]:
                raise ScaleError(f"symbol {k} is fixed at {sp['fixed'][k]} in this capture (a size-1 dimension "
                                 "changes PyTorch's view/copy decisions): capture at the other size instead")
            continue
        if k in sp["ties"]:
            raise ScaleError(f"symbol {k} is tied ({k} = {sp['ties'][k]}): change "
                             f"{', '.join(sorted(set(_syms(sp['ties'][k]))))} instead")
        if k not in indep:
            raise ScaleError(f"unknown symbol {k}; this capture's symbols: {', '.join(sp['independent'])}")
        indep[k] = int(v)
    vals = space.complete(indep)
    for k in [k for k in cur if k == "L" or k.startswith("L_")]:
        vals[k] = int(changes.get(k, cur[k]))
    return vals


def _syms(expr):
    import re
    return re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expr)


def scale(doc, changes):
    vals = new_symbols(doc, changes)
    out = copy.deepcopy(doc)
    out["symbols"] = dict(sorted(vals.items()))
    out["run"]["micro_batch"] = vals.get("b", out["run"]["micro_batch"])
    out["run"]["seq"] = vals.get("s", out["run"]["seq"])
    if "L" in changes:
        kinds = [k for k, _ in doc["model"]["layer_sequence"]]
        if len(set(kinds)) != 1:
            raise ScaleError("L of a model with several layer kinds: give its layer sequence instead")
        out["model"]["layers"] = vals["L"]
        out["model"]["layer_counts"] = {kinds[0]: vals["L"]}
        out["model"]["layer_sequence"] = [[kinds[0], vals["L"]]]
        for L in out["layers"]:
            L["count"] = vals["L"]
    kind_seq = expand_kinds(out)

    def ev(x):
        return parse(x).evaluate(vals)

    def walk(x):
        if isinstance(x, dict):
            if "shape_expr" in x:
                x["shape"] = [ev(e) for e in x["shape_expr"]]
                if "stride_expr" in x:
                    x["stride"] = [ev(e) for e in x["stride_expr"]]
                if "offset_expr" in x:
                    x["offset"] = ev(x["offset_expr"])
            for k in ("bytes_read", "bytes_written", "flops"):
                if k + "_expr" in x and "op" in x:
                    x[k] = ev(x[k + "_expr"])
            for meta in ("gemm", "attention"):
                if meta in x and isinstance(x[meta], dict):
                    m = x[meta]
                    for k in list(m):
                        if k.endswith("_expr"):
                            m[k[:-5]] = ev(m[k])
                    if meta == "gemm" and "cublas" in m:
                        m["cublas"].update({"m": m["n"], "n": m["m"], "k": m["k"]})
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(out["params"])
    walk(out["phases"])
    walk(out["layers"])
    walk(out["buffers"])
    for seg in out["phases"]["optimizer"]["segments"]:
        for ops in ([seg["ops"]] if "ops" in seg else [b["ops"] for b in seg["bodies"].values()]):
            for e in ops:
                if "lists" in e:
                    e["kernels"] = list_op_kernels(e, kind_seq)
    for b in out["buffers"]:
        if b.get("bytes_expr"):
            b["bytes"] = ev(b["bytes_expr"])
        b["alloc_bytes"] = round_alloc(b["bytes"])
    for p in out["params"]:
        pass
    out["totals"] = totals(out)
    out["memory"] = replay(out)
    return out
