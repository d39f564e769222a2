"""From a raw recording (step.Raw) to the emitted structure: the representative layer of each
layer kind, the model's ends, the optimizer, and the buffers they use, with every buffer of a
non-representative layer mapped to the representative's (plus a layer offset).

The result (a `Skeleton`) still holds plain integers in its tensor layouts ("shape", "stride",
"offset"); `capture.py` replaces them by expressions and computes the derived fields.
"""
from .opinfo import classify, base_name

END_PHASES = ("embed.forward", "head.forward", "head.backward", "embed.backward")
LAYER_PHASES = ("layer.forward", "layer.recompute", "layer.backward")
BEFORE_STEP = ("param", "model_buffer", "input", "existing", "optimizer_state", "param_host", "grad_host")

# Megatron-style tensor parallelism by module name (Shoeybi et al. 2019, Sec. 3): column-parallel
# Linears split their output features, row-parallel ones their input features; the LM head and the
# embedding split the vocabulary.
TP_COLUMN = {"q_proj", "k_proj", "v_proj", "qkv_proj", "qkv", "c_attn", "query_key_value", "wqkv", "query", "key",
             "value", "gate_proj", "up_proj", "gate_up_proj", "gate_up", "fc1", "c_fc", "dense_h_to_4h", "w1", "w3",
             "in_proj", "fc_in", "gate", "up", "w_qkv", "wq", "wk", "wv"}
TP_ROW = {"o_proj", "out_proj", "proj", "c_proj", "dense", "down_proj", "fc2", "dense_4h_to_h", "w2", "fc_out",
          "o", "wo", "down", "attn_out"}
TP_VOCAB = {"lm_head", "head", "embed_out", "wte", "embed_tokens", "word_embeddings", "tok_embeddings", "output"}


def tp_mode(module_name):
    if module_name is None:
        return None
    last = module_name.split(".")[-1].lower()
    if last in TP_COLUMN:
        return "column"
    if last in TP_ROW:
        return "row"
    if last in TP_VOCAB:
        return "vocab"
    return "unknown"


class Skeleton:
    pass


def analyze(raw):
    sk = Skeleton()
    ops = raw.ops
    bufs = raw.buffers
    kinds = raw.layer_kinds
    n_layers = len(kinds)
    sk.layer_kinds = kinds
    # representative of each kind: the middle of its first run of (at least three) layers
    reps = {}
    i = 0
    while i < n_layers:
        j = i
        while j < n_layers and kinds[j] == kinds[i]:
            j += 1
        if kinds[i] not in reps:
            reps[kinds[i]] = (i + j - 1) // 2 if j - i >= 3 else i + (1 if j - i == 2 else 0)
        i = j
    sk.reps = reps
    rep_of_layer = {li: reps[kinds[li]] for li in range(n_layers)}
    sk.notes = list(raw.notes)

    for o in ops:
        o["class"] = classify(o["op"], o)

    # ---- ops by occurrence ------------------------------------------------------------------
    by_occ = {}
    for g, o in enumerate(ops):
        o["g"] = g
        by_occ.setdefault(o["occ"], []).append(o)
    for (kind, li), lst in by_occ.items():
        if kind not in END_PHASES + LAYER_PHASES + ("optimizer", "optimizer.first"):
            sk.notes.append(f"{len(lst)} ops outside the step's regions ({kind}) are not emitted")

    # ---- layer identity check ----------------------------------------------------------------
    for li in range(n_layers):
        r = rep_of_layer[li]
        if li == r:
            continue
        for ph in LAYER_PHASES:
            a = [(o["op"], [t["shape"] for t in o["in"]]) for o in by_occ.get((ph, li), [])]
            b = [(o["op"], [t["shape"] for t in o["in"]]) for o in by_occ.get((ph, r), [])]
            if a != b:
                sk.notes.append(f"captured layer {li} ({ph}) differs from the representative layer {r}: "
                                f"{len(a)} ops against {len(b)}")

    # ---- parameters ----------------------------------------------------------------------------
    prefix = raw.layers_path + "."
    param_group = {}
    for p in raw.params:
        n = p["name"]
        if n.startswith(prefix):
            rest = n[len(prefix):]
            li_s, local = rest.split(".", 1)
            param_group[n] = ("layer", int(li_s), local)
        else:
            param_group[n] = ("ends", None, n)
    sk.param_group = param_group

    # buffer -> (layer index or None) and local key for mapping onto the representative
    canon = {}   # raw buffer id -> (rep raw buffer id, offset) for layer-owned buffers
    owner = {}   # raw buffer id -> ("layer", li) | ("ends", None) | ("optimizer", None) | ("first", None)
    pos_index = {}  # (phase, li, idx, outpos) -> raw buffer id
    for b in bufs:
        if b.alloc is not None:
            (ph, li), idx = b.alloc
            pos_index[(ph, li, idx, b.out_pos[1])] = b.id
    param_index = {}
    for b in bufs:
        if b.param is not None and b.kind in ("param", "grad", "optimizer_state", "param_host", "grad_host"):
            pname, _, state = b.param.partition(":")
            g = param_group.get(pname)
            if g and g[0] == "layer":
                param_index[(b.kind, g[1], g[2], state)] = b.id
    for b in bufs:
        if b.alloc is not None and b.kind not in ("optimizer_state",):
            (ph, li), idx = b.alloc
            if ph in LAYER_PHASES:
                owner[b.id] = ("layer", li)
                r = rep_of_layer[li]
                rid = pos_index.get((ph, r, idx, b.out_pos[1]))
                if rid is None:
                    sk.notes.append(f"buffer {b.id} of layer {li} has no counterpart in layer {r}")
                    rid = b.id
                canon[b.id] = (rid, li - r)
            elif ph in END_PHASES:
                owner[b.id] = ("ends", None)
            elif ph == "optimizer":
                owner[b.id] = ("optimizer", None)
            else:
                owner[b.id] = ("other", ph)
        if b.param is not None and b.kind in ("param", "optimizer_state", "param_host", "grad_host") or \
                (b.kind == "grad" and b.alloc is None):
            pname, _, state = b.param.partition(":")
            g = param_group.get(pname)
            if g and g[0] == "layer":
                owner[b.id] = ("layer", g[1])
                r = rep_of_layer[g[1]]
                rid = param_index.get((b.kind, r, g[2], state), b.id)
                canon[b.id] = (rid, g[1] - r)
            elif b.id not in owner:
                owner[b.id] = ("ends", None)
        if b.id not in owner:
            owner[b.id] = ("ends", None)
    sk.canon = canon
    sk.owner = owner

    # ---- GEMM weights: which parameter a GEMM reads, or whose gradient it makes ----------------
    module_type = {p["name"]: p.get("module_type", "") for p in raw.params}
    param_of_buf = {}
    for b in bufs:
        if b.kind == "param":
            param_of_buf[b.id] = b.param
    for b in bufs:
        if b.cast_of is not None and b.cast_of in param_of_buf:
            param_of_buf[b.id] = param_of_buf[b.cast_of]
    last_x = {}
    for o in ops:
        if o["class"] not in ("gemm", "batched_gemm"):
            continue
        A, B = _operands(o)
        for which, t in (("a", A), ("b", B)):
            pn = param_of_buf.get(t["buf"])
            if pn is not None:
                o["weight"] = pn
                o["weight_operand"] = which
                o["weight_module_type"] = module_type.get(pn, "")
                other = B if which == "a" else A
                if o["occ"][0] in ("embed.forward", "layer.forward", "layer.recompute", "head.forward"):
                    last_x[pn] = other["buf"]
                break
    producer = {b.id: b.producer for b in bufs}
    for b in bufs:
        if b.kind != "grad":
            continue
        g = producer.get(b.id)
        seen = 0
        while g is not None and seen < 8:
            o = ops[g]
            if o["class"] in ("gemm", "batched_gemm"):
                o["wgrad_of"] = b.param
                o["weight_module_type"] = module_type.get(b.param, "")
                x = last_x.get(b.param)
                A, B = _operands(o)
                if x is not None:
                    o["wgrad_x"] = "b" if B["buf"] == x else ("a" if A["buf"] == x else None)
                break
            if o["class"] in ("copy_cast", "elementwise", "view") and o["in"]:
                g = producer.get(o["in"][0]["buf"])
                seen += 1
                continue
            break

    # ---- emitted occurrences ----------------------------------------------------------------------
    sk.phases = {}
    for ph in END_PHASES:
        sk.phases[ph] = by_occ.get((ph, None), [])
    sk.layers = []
    for kind, r in sorted(reps.items(), key=lambda kv: kv[1]):
        entry = {"kind": kind, "index": r, "count_captured": kinds.count(kind)}
        for ph in LAYER_PHASES:
            entry[ph] = by_occ.get((ph, r), [])
        rc = entry["layer.recompute"]
        if rc:
            first = rc[0]["g"]
            entry["recompute_at"] = sum(1 for o in entry["layer.backward"] if o["g"] < first)
        else:
            entry["recompute_at"] = None
        sk.layers.append(entry)
    sk.optimizer_ops = by_occ.get(("optimizer", None), [])
    sk.n_layers = n_layers
    sk.raw = raw
    return sk


def _operands(o):
    b = base_name(o["op"])
    ins = o["in"]
    if b in ("addmm", "_addmm_activation", "baddbmm"):
        return ins[1], ins[2]
    return ins[0], ins[1]


def position_of(sk, pos, alloc_layer=None, what=None):
    """A recorder position ((phase, layer), idx) as emitted: phase plus layer offset/index."""
    (ph, li), idx = pos
    d = {"phase": ph, "op": idx}
    if ph in LAYER_PHASES:
        if alloc_layer is not None:
            d["layer_offset"] = li - alloc_layer
        else:
            d["layer_index"] = li if li < sk.n_layers - 1 or li == 0 else li - sk.n_layers
            if 0 < li < sk.n_layers - 1 and what == "free":
                sk.notes.append(f"a buffer of the model's ends is freed in captured layer {li}, neither first nor last")
    return d
