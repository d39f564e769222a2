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


def repeated_layer_sequence(sequence, n):
    """n layers of the captured kinds in their order, repeated by the shortest period of the captured
    sequence (Gemma 2's alternation, Gemma 3's five sliding to one full), as [kind, run] pairs; the
    C++ reader scales the same way (workloads/capture_scale.cpp, repeated_layer_sequence)."""
    layers = [k for k, run in sequence for _ in range(run)]
    if not layers:
        raise ScaleError("model.layer_sequence is empty")
    period = next(p for p in range(1, len(layers) + 1)
                  if all(layers[i] == layers[i % p] for i in range(len(layers))))
    out = []
    for i in range(n):
        kind = layers[i % period]
        if out and out[-1][0] == kind:
            out[-1][1] += 1
        else:
            out.append([kind, 1])
    return out


def scale(doc, changes):
    vals = new_symbols(doc, changes)
    out = copy.deepcopy(doc)
    out["symbols"] = dict(sorted(vals.items()))
    out["run"]["micro_batch"] = vals.get("b", out["run"]["micro_batch"])
    out["run"]["seq"] = vals.get("s", out["run"]["seq"])
    if "L" in changes:
        n = int(changes["L"])
        seq = repeated_layer_sequence(doc["model"]["layer_sequence"], n)
        counts = {}
        for kind, run in seq:
            counts[kind] = counts.get(kind, 0) + run
        out["model"]["layers"] = n
        out["model"]["layer_counts"] = dict(sorted(counts.items()))
        out["model"]["layer_sequence"] = [list(x) for x in seq]
        for L in out["layers"]:
            L["count"] = counts.get(L["kind"], 0)
        if "L" in doc["symbols"]:
            vals["L"] = n
        for kind, c in counts.items():
            if "L_" + kind in doc["symbols"]:
                vals["L_" + kind] = c
        out["symbols"] = dict(sorted(vals.items()))
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
    out["totals"] = totals(out)
    out["memory"] = replay(out)
    return out


# ---------------------------------------------------------------------------------------------
# from a Hugging Face config (what the C++ side does with a user's config.json)

HF_KEYS = {
    "h": ("hidden_size", "n_embd", "d_model"),
    "a": ("num_attention_heads", "n_head", "n_heads"),
    "kv": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "d": ("head_dim",),
    "f": ("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"),
    "V": ("vocab_size",),
    "P": ("max_position_embeddings", "n_positions"),
    "L": ("num_hidden_layers", "n_layer", "n_layers"),
}


def symbols_from_hf_config(cfg):
    """The symbols of a config.json dict, with transformers' usual defaults (kv = a; d = h / a;
    f = 4h where the MLP width is unset; falcon's multi_query: kv = 1). A text model inside a
    multimodal config is read from its text_config."""
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]

    def get(sym):
        for k in HF_KEYS[sym]:
            if cfg.get(k) is not None:
                return int(cfg[k])
        return None

    v = {s: get(s) for s in HF_KEYS}
    if v["h"] is None or v["a"] is None:
        raise ScaleError("the config has no hidden size or attention heads")
    if v["kv"] is None:
        v["kv"] = 1 if cfg.get("multi_query") and not cfg.get("new_decoder_architecture") else v["a"]
    if v["d"] is None:
        v["d"] = v["h"] // v["a"]
    if v["f"] is None:
        v["f"] = 4 * v["h"]
    v["g"] = v["a"] // v["kv"]
    return {k: x for k, x in v.items() if x is not None}


def scale_to_config(doc, cfg, micro_batch=None, seq=None):
    """scale() to the sizes of another config of the same architecture (and a micro-batch and
    sequence length): its independent symbols are taken from the config, the tied ones must agree."""
    want = symbols_from_hf_config(cfg)
    if micro_batch is not None:
        want["b"] = micro_batch
    if seq is not None:
        want["s"] = seq
    sp = doc["symbol_space"] or {"independent": [], "ties": {}, "fixed": {}}
    changes = {k: want[k] for k in sp["independent"] if k in want}
    if "L" in want:
        changes["L"] = want["L"]
    out = scale(doc, changes)
    for k in list(sp["ties"]) + list(sp["fixed"]):
        if k in want and k in out["symbols"] and out["symbols"][k] != want[k]:
            raise ScaleError(f"the config's {k} = {want[k]} does not follow this capture's architecture "
                             f"({k} = {sp['ties'].get(k, sp['fixed'].get(k))} gives {out['symbols'][k]})")
    return out
