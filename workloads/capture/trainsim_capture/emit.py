"""The capture document: from a Skeleton (analyze.py) to the JSON structure SCHEMA.md describes.

`collect` lays out the emitted ops, buffers, parameters and optimizer with integer layouts;
`layout_slots` lists every layout in a fixed order (what the symbol matcher matches);
`finalize` writes each layout's expressions and computes the derived fields (bytes, FLOPs,
kernels, GEMM and attention metadata) from both the integers and the expressions.
"""
from .analyze import END_PHASES, LAYER_PHASES, BEFORE_STEP, tp_mode, position_of, _operands
from .opinfo import TV, derive, kernels, base_name, DTYPE_BYTES, storage_numel, prod, ATTN_FWD_OPS, ATTN_BWD_OPS
from .poly import Poly

ALLOC_BLOCK = 512  # PyTorch's CUDA caching allocator rounds every request up to 512 bytes
PHASE_NAMES = {"layer.forward": "forward", "layer.recompute": "recompute", "layer.backward": "backward"}


def round_alloc(n):
    return 0 if n == 0 else -(-n // ALLOC_BLOCK) * ALLOC_BLOCK


class Collected:
    pass


def collect(sk):
    raw = sk.raw
    bufs = raw.buffers
    c = Collected()
    c.sk = sk
    emitted = set()

    def want(bid):
        """Raw id of the buffer an op's tensor stands for (the representative's), plus offset."""
        if bid in sk.canon:
            rid, off = sk.canon[bid]
            return rid, off
        return bid, 0

    # ---- ops ---------------------------------------------------------------------------------
    def tref(t, ctx_layer):
        rid, off = want(t["buf"])
        emitted.add(rid)
        d = {"buf": rid, "dtype": t["dtype"], "shape": list(t["shape"]), "stride": list(t["stride"]),
             "offset": t["offset"]}
        if t["device"] != raw.run.device:
            d["device"] = t["device"]
        own = sk.owner.get(t["buf"], ("ends", None))
        if own[0] == "layer":
            li = own[1]
            if ctx_layer is not None:
                if li - ctx_layer != 0:
                    d["layer_offset"] = li - ctx_layer
            else:
                d["layer_index"] = li if li == 0 or li < sk.n_layers - 1 else li - sk.n_layers
        return d

    def op_entry(o, ctx_layer):
        e = {"i": o["idx"], "op": o["op"], "class": o["class"], "stream": o["stream"],
             "in": [tref(t, ctx_layer) for t in o["in"]], "out": [tref(t, ctx_layer) for t in o["out"]],
             "_raw": o}
        if o.get("module"):
            e["module"] = o["module"]
        if o.get("node"):
            e["autograd_node"] = o["node"]
        if o["mutated"]:
            e["mutates"] = list(o["mutated"])
        return e

    c.phases = {}
    for ph in END_PHASES:
        c.phases[ph] = [op_entry(o, None) for o in sk.phases[ph]]
    c.layers = []
    for L in sk.layers:
        le = {"kind": L["kind"], "index": L["index"], "recompute_at": L["recompute_at"]}
        for ph in LAYER_PHASES:
            le[ph] = [op_entry(o, L["index"]) for o in L[ph]]
        c.layers.append(le)

    # ---- optimizer segments ---------------------------------------------------------------------
    c.opt_segments, c.opt_pos = _optimizer_segments(sk, op_entry, tref)

    # ---- buffers -------------------------------------------------------------------------------
    by_id = {b.id: b for b in bufs}
    for b in bufs:
        if b.alloc is None and b.kind in BEFORE_STEP:
            if b.id not in sk.canon or sk.canon[b.id][0] == b.id:
                emitted.add(b.id)
        elif b.alloc is not None and b.kind == "optimizer_state":
            if b.id not in sk.canon or sk.canon[b.id][0] == b.id:
                emitted.add(b.id)
        elif b.alloc is not None:
            (ph, li), idx = b.alloc
            if ph in END_PHASES:
                emitted.add(b.id)
            elif ph in LAYER_PHASES and li in [x["index"] for x in sk.layers]:
                emitted.add(b.id)
            elif ph == "optimizer" and b.id in c.opt_pos["emit"]:
                emitted.add(b.id)
    # canonical ids: by raw id
    order = sorted(emitted)
    cid = {rid: i for i, rid in enumerate(order)}
    c.cid = cid
    rep_layers = {x["index"]: x["kind"] for x in sk.layers}

    def map_ref(d):
        d["buf"] = cid[d["buf"]]

    for ops in list(c.phases.values()) + [L[ph] for L in c.layers for ph in LAYER_PHASES]:
        for e in ops:
            for t in e["in"] + e["out"]:
                map_ref(t)
    for seg in c.opt_segments:
        for ops in seg["_bodies"]:
            for e in ops:
                for t in e["in"] + e["out"]:
                    map_ref(t)
                for lst in e.get("lists", []):
                    for t in lst["members"]:
                        map_ref(t)

    c.buffers = []
    for rid in order:
        b = by_id[rid]
        own = sk.owner.get(rid, ("ends", None))
        entry = {"id": cid[rid], "kind": b.kind, "dtype": b.dtype, "bytes": b.nbytes, "_raw": b}
        if b.device != raw.run.device:
            entry["device"] = b.device
        if b.param is not None:
            entry["of"] = b.param
        if b.freed_by_gc:
            entry["freed_by_gc"] = True
        layout = _buffer_layout(b, raw)
        if layout is not None:
            entry["layout"] = {k: layout[k] for k in ("shape", "stride", "offset", "dtype")}
        alloc_layer = None
        if b.kind in BEFORE_STEP or b.kind == "optimizer_state":
            entry["alloc"] = None
            if own[0] == "layer":
                alloc_layer = own[1]
                entry["owner"] = "layer"
                entry["layer_kind"] = sk.layer_kinds[own[1]]
            else:
                entry["owner"] = "ends"
        else:
            (ph, li), idx = b.alloc
            if ph in LAYER_PHASES:
                alloc_layer = li
                entry["owner"] = "layer"
                entry["layer_kind"] = rep_layers.get(li, sk.layer_kinds[li])
                entry["alloc"] = {"phase": ph, "op": idx}
            elif ph == "optimizer":
                entry["owner"] = "optimizer"
                entry["alloc"] = {k: v for k, v in c.opt_pos["map"][(b.alloc[0], idx)].items() if k != "_rep"}
                if rid in c.opt_pos["per_layer"]:
                    entry["per_layer"] = c.opt_pos["per_layer"][rid]
                elif rid in c.opt_pos["per_repetition"]:
                    entry["per_repetition"] = True
                    entry["layer_kind"] = c.opt_pos["per_repetition"][rid]
            else:
                entry["owner"] = "ends"
                entry["alloc"] = {"phase": ph, "op": idx}
        entry["free"] = _free_pos(sk, c, b, alloc_layer)
        if alloc_layer is not None and b.alloc is not None and b.kind != "optimizer_state":
            for which, li2 in (("free_first", 0), ("free_last", sk.n_layers - 1)):
                if sk.layer_kinds[li2] != sk.layer_kinds[alloc_layer]:
                    continue
                twin = _twin(sk, b, li2)
                if twin is not None:
                    fp = _free_pos(sk, c, twin, li2)
                    if fp != entry["free"]:
                        entry[which] = fp
        if rid in c.opt_pos["per_repetition"]:
            for which, li2 in (("free_first", 0), ("free_last", sk.n_layers - 1)):
                twin = c.opt_pos["twins"].get((rid, li2))
                if twin is not None:
                    fp = _free_pos(sk, c, twin, None)
                    if fp != entry["free"]:
                        entry[which] = fp
        if b.saved:
            entry["saved"] = [_pos(sk, c, p, alloc_layer, b) for p in b.saved]
        c.buffers.append(entry)

    # ---- parameters ----------------------------------------------------------------------------
    c.params = []
    for p in raw.params:
        grp = sk.param_group[p["name"]]
        b = by_id.get(p["buf"])
        if grp[0] == "layer" and grp[1] not in rep_layers:
            continue
        module = p["name"].rsplit(".", 1)[0] if "." in p["name"] else p["name"]
        local = grp[2]
        entry = {"name": p["name"], "buf": cid.get(b.id) if b is not None else None,
                 "group": "layer" if grp[0] == "layer" else _end_group(sk, b),
                 "shape": list(b.layout["shape"]) if b is not None and b.layout else list(p["shape"]),
                 "dtype": b.dtype if b is not None else p["dtype"]}
        if grp[0] == "layer":
            entry["local"] = local
            entry["layer_kind"] = rep_layers[grp[1]]
            module = local.rsplit(".", 1)[0] if "." in local else local
        entry["module"] = module
        mode = tp_mode(module) if p["name"].endswith("weight") and len(entry["shape"]) == 2 else "replicated"
        entry["tp"] = mode if mode != "unknown" else "replicated"
        c.params.append(entry)
    return c


def _end_group(sk, b):
    if b is None or b.first_use is None:
        return "head"
    return "embed" if b.first_use[0][0] == "embed.forward" else "head"


def _buffer_layout(b, raw):
    if b.out_pos is not None:
        g, pos = b.out_pos
        t = raw.ops[g]["out"][pos]
        return t
    return b.layout


def _twin(sk, b, li2):
    (ph, li), idx = b.alloc
    index = getattr(sk, "_alloc_index", None)
    if index is None:
        index = {}
        for x in sk.raw.buffers:
            if x.alloc is not None and x.out_pos is not None:
                index[(x.alloc[0], x.alloc[1], x.out_pos[1])] = x
        sk._alloc_index = index
    return index.get(((ph, li2), idx, b.out_pos[1]))


def _opt_pos(sk, c, pos, b):
    """An optimizer position; inside a "layers" segment it names the repetition (layer) relative
    to the buffer's own repetition (per-repetition buffers) or as an index (others)."""
    (ph, li), idx = pos
    m = dict(c.opt_pos["map"].get(((ph, li), idx), {"phase": "optimizer", "op": idx}))
    rep = m.pop("_rep", None)
    if rep is not None:
        own = c.opt_pos["rep_of_buf"].get(b.id)
        if own is not None:
            m["layer_offset"] = rep - own
        else:
            m["layer_index"] = rep if rep == 0 or rep < sk.n_layers - 1 else rep - sk.n_layers
    return m


def _pos(sk, c, pos, alloc_layer, b=None):
    (ph, li), idx = pos
    if ph == "optimizer":
        return _opt_pos(sk, c, pos, b)
    return position_of(sk, pos, alloc_layer)


def _free_pos(sk, c, b, alloc_layer):
    if b.free is None or b.freed_by_gc:
        return None
    (ph, li), idx = b.free
    if ph in ("end", "setup", "optimizer.first"):
        return None
    if ph == "optimizer":
        return dict(_opt_pos(sk, c, b.free, b), after=True)
    d = position_of(sk, b.free, alloc_layer, what="free")
    d["after"] = True
    return d


# ---------------------------------------------------------------------------------------------
# optimizer

OPT_KINDS = ("param", "grad", "optimizer_state", "param_host", "grad_host")


def _param_of(sk, bid):
    b = sk.raw.buffers[bid]
    if b.kind in OPT_KINDS and b.param:
        return b.param.split(":")[0], b
    tp = getattr(sk, "temp_param", {}).get(bid)
    if tp is not None:
        return tp, b
    return None, b


def _role(b):
    if b.kind not in OPT_KINDS:
        return "temp"
    if b.kind == "optimizer_state":
        return b.param.split(":", 1)[1]
    return {"param": "param", "grad": "grad", "param_host": "param", "grad_host": "grad"}.get(b.kind, "temp")


def _optimizer_segments(sk, op_entry, tref):
    ops = sk.optimizer_ops
    reps = {x["index"] for x in sk.layers}
    # temporaries of out-of-place list ops belong to the parameter of their list position
    sk.temp_param = {}
    for o in ops:
        if o["lists"] and o["out"]:
            first = o["lists"][0]
            for k, t in enumerate(o["out"]):
                if k < len(first):
                    pn, _ = _param_of(sk, o["in"][first[k]]["buf"])
                    if pn is not None:
                        sk.temp_param[t["buf"]] = pn
        elif o["out"]:
            # a per-parameter op's temporaries (the for-loop step's sqrt, denominators) are that parameter's
            names = {_param_of(sk, t["buf"])[0] for t in o["in"]} - {None}
            if len(names) == 1:
                pn = names.pop()
                for t, fresh in zip(o["out"], o["out_fresh"]):
                    if fresh:
                        sk.temp_param[t["buf"]] = pn
    runs = []
    for o in ops:
        if o["lists"]:
            key = ("all", None)
        else:
            names = set()
            for t in o["in"] + o["out"]:
                pn, _ = _param_of(sk, t["buf"])
                if pn:
                    names.add(pn)
            if len(names) == 1:
                g = sk.param_group[names.pop()]
                key = ("layer", g[1]) if g[0] == "layer" else ("ends", None)
            else:
                key = ("all", None)
        if runs and runs[-1][0] == key:
            runs[-1][1].append(o)
        else:
            runs.append((key, [o]))
    segments = []
    posmap = {}
    per_layer = {}
    per_rep = {}
    rep_of_buf = {}
    body_pos = {}
    emit = set()
    i = 0
    while i < len(runs):
        key, lst = runs[i]
        if key[0] == "layer":
            j = i
            bodies = {}
            while j < len(runs) and runs[j][0][0] == "layer":
                li = runs[j][0][1]
                if li in reps:
                    bodies[sk.layer_kinds[li]] = (li, runs[j][1])
                j += 1
            k = len(segments)
            seg = {"group": "layers", "bodies": {}, "_bodies": []}
            for kind, (li, body) in sorted(bodies.items()):
                entries = [op_entry(o, li) for o in body]
                seg["bodies"][kind] = entries
                seg["_bodies"].append(entries)
            # positions of every layer's ops map onto its kind's representative body
            for jj in range(i, j):
                li = runs[jj][0][1]
                for n, o in enumerate(runs[jj][1]):
                    posmap[(o["occ"], o["idx"])] = {"phase": "optimizer", "segment": k, "op": n, "_rep": li}
            segments.append(seg)
            i = j
            continue
        k = len(segments)
        entries = []
        for n, o in enumerate(lst):
            e = op_entry(o, None) if not o["lists"] else _list_op_entry(sk, o, tref, reps, per_layer, emit)
            entries.append(e)
            posmap[(o["occ"], o["idx"])] = {"phase": "optimizer", "segment": k, "op": n}
        segments.append({"group": key[0], "ops": entries, "_bodies": [entries]})
        i += 1
    # buffers the optimizer allocates outside list ops, in emitted segments
    for b in sk.raw.buffers:
        if b.alloc is not None and b.alloc[0][0] == "optimizer" and b.kind not in ("optimizer_state",):
            pn, _ = _param_of(sk, b.id)
            src_op = sk.raw.ops[b.producer]
            if src_op["lists"]:
                continue
            owner_layer = None
            for t in src_op["in"] + src_op["out"]:
                p2, _ = _param_of(sk, t["buf"])
                if p2 and sk.param_group[p2][0] == "layer":
                    owner_layer = sk.param_group[p2][1]
            if owner_layer is not None:
                rep_of_buf[b.id] = owner_layer
                m = posmap.get((b.alloc[0], b.alloc[1]))
                if m is not None:
                    body_pos[(m["segment"], m["op"], owner_layer, b.out_pos[1])] = b
            if owner_layer is None or owner_layer in reps:
                emit.add(b.id)
                if owner_layer is not None:
                    per_rep[b.id] = sk.layer_kinds[owner_layer]
    twins = {}
    for (seg_k, n, li, outp), b in body_pos.items():
        if li in reps:
            for li2 in (0, sk.n_layers - 1):
                t = body_pos.get((seg_k, n, li2, outp))
                if t is not None and li2 != li:
                    twins[(b.id, li2)] = t
    # zero_grad frees after the last op: position of the last op
    return segments, {"map": posmap, "per_layer": per_layer, "emit": emit, "per_repetition": per_rep,
                      "rep_of_buf": rep_of_buf, "twins": twins}


def _list_op_entry(sk, o, tref, reps, per_layer, emit):
    e = {"i": o["idx"], "op": o["op"], "class": o["class"], "stream": o["stream"], "_raw": o, "in": [], "out": []}
    lists = []
    in_list_members = set()
    for li_, members in enumerate(o["lists"]):
        mem = []
        role = None
        for m in members:
            in_list_members.add(m)
            t = o["in"][m]
            pn, b = _param_of(sk, t["buf"])
            role = _role(b) if pn else "temp"
            g = sk.param_group.get(pn, ("ends", None, None)) if pn else ("ends", None, None)
            if g[0] == "layer" and g[1] not in reps:
                continue
            r = tref(t, g[1] if g[0] == "layer" else None)
            r["param"] = pn
            r["group"] = "layer" if g[0] == "layer" else "ends"
            if g[0] == "layer":
                r["layer_kind"] = sk.layer_kinds[g[1]]
            r["_m"] = m
            mem.append(r)
        lists.append({"role": role, "dtype": o["in"][members[0]]["dtype"],
                      "mutated": members[0] in o["mutated"], "members": mem})
    # other tensor arguments (scalars as tensors: lr, grad_scale, found_inf)
    for m, t in enumerate(o["in"]):
        if m not in in_list_members:
            e["in"].append(tref(t, None))
    # outputs of out-of-place foreach ops: one per member of the first list
    if o["out"] and o["lists"]:
        first = o["lists"][0]
        mem = []
        for k, t in enumerate(o["out"]):
            src = o["in"][first[k]] if k < len(first) else None
            pn = _param_of(sk, src["buf"])[0] if src is not None else None
            g = sk.param_group.get(pn, ("ends", None, None)) if pn else ("ends", None, None)
            if g[0] == "layer" and g[1] not in reps:
                continue
            r = tref(t, g[1] if g[0] == "layer" else None)
            r["param"] = pn
            r["group"] = "layer" if g[0] == "layer" else "ends"
            if g[0] == "layer":
                r["layer_kind"] = sk.layer_kinds[g[1]]
                per_layer[t["buf"]] = sk.layer_kinds[g[1]]
            emit.add(t["buf"])
            mem.append(r)
        lists.append({"role": "out", "dtype": o["out"][0]["dtype"], "mutated": False, "output": True, "members": mem})
    e["lists"] = lists
    return e


# ---------------------------------------------------------------------------------------------
# layouts and derived fields

def layout_slots(c):
    """Every layout dict of the document, in a fixed order."""
    out = []

    def walk(x):
        if isinstance(x, dict):
            if "shape" in x and isinstance(x["shape"], list):
                out.append(x)
            for k in sorted(x):
                if k.startswith("_"):
                    continue
                walk(x[k])
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk({"params": c.params, "phases": c.phases, "layers": c.layers, "buffers": c.buffers,
          "optimizer": c.opt_segments})
    return out


def slot_values(c):
    """(values, labels): the integers the matcher matches, and where they are."""
    vals, labels = [], []
    for n, d in enumerate(layout_slots(c)):
        for i, v in enumerate(d["shape"]):
            vals.append(v)
            labels.append((n, "shape", i))
        for i, v in enumerate(d.get("stride", [])):
            vals.append(v)
            labels.append((n, "stride", i))
        if "offset" in d:
            vals.append(d["offset"])
            labels.append((n, "offset", 0))
    return vals, labels


def assign_polys(c, polys):
    """Writes the matched polynomials back into the layouts (private keys _shape_p, ...)."""
    it = iter(polys)
    for d in layout_slots(c):
        d["_shape_p"] = [next(it) for _ in d["shape"]]
        if "stride" in d:
            d["_stride_p"] = [next(it) for _ in d["stride"]]
        if "offset" in d:
            d["_offset_p"] = next(it)


def literal_polys(c):
    vals, _ = slot_values(c)
    assign_polys(c, [Poly.const(v) for v in vals])


def _tvs(ts, use_poly):
    out = []
    for t in ts:
        if use_poly:
            out.append(TV(t, t["_shape_p"], t.get("_stride_p", t["stride"]), t.get("_offset_p", t.get("offset", 0))))
        else:
            out.append(TV(t, t["shape"], t["stride"], t.get("offset", 0)))
    return out


def _s(x):
    return str(x) if isinstance(x, Poly) else str(int(x))


def finalize_op(e, layer_counts, layer_kind_seq):
    """Derived fields of an emitted op (ints and expressions)."""
    o = e["_raw"]
    cls = e["class"]
    if "lists" in e:
        return _finalize_list_op(e, layer_counts, layer_kind_seq)
    ins_i, outs_i = _tvs(e["in"], False), _tvs(e["out"], False)
    ins_p, outs_p = _tvs(e["in"], True), _tvs(e["out"], True)
    mut = o["mutated"]
    di = derive(o, ins_i, outs_i, [ins_i[m] for m in mut])
    dp = derive(o, ins_p, outs_p, [ins_p[m] for m in mut])
    e["kernels"] = kernels(o, o["in"], o["out"])
    e["bytes_read"] = int(di["bytes_read"])
    e["bytes_written"] = int(di["bytes_written"])
    e["flops"] = int(di["flops"])
    e["bytes_read_expr"] = _s(dp["bytes_read"])
    e["bytes_written_expr"] = _s(dp["bytes_written"])
    e["flops_expr"] = _s(dp["flops"])
    if cls == "view":
        e["view"] = True
    if "gemm" in di:
        e["gemm"] = _gemm_meta(e, o, di["gemm"], dp["gemm"])
    if "attention" in di:
        e["attention"] = _attn_meta(o, di["attention"], dp["attention"])
    return e


def _gemm_meta(e, o, gi, gp):
    A, B = _operands(o)
    g = {}
    for k in ("m", "n", "k", "batch"):
        g[k] = int(gi[k])
        g[k + "_expr"] = _s(gp[k])
    g["dtype"] = A["dtype"]
    g["out_dtype"] = o["out"][0]["dtype"] if o["out"] else A["dtype"]
    ta, tb = _trans(A), _trans(B)
    g["layout"] = ("T" if ta else "N") + ("T" if tb else "N")
    # cuBLAS is column-major: ATen computes C^T = B^T A^T, so B is cuBLAS's first operand
    g["cublas"] = {"transa": "t" if tb else "n", "transb": "t" if ta else "n", "m": g["n"], "n": g["m"], "k": g["k"]}
    ph = o["occ"][0]
    w = o.get("weight")
    if o.get("wgrad_of"):
        g["pass"] = "wgrad"
        w = o["wgrad_of"]
    elif w is not None:
        g["pass"] = "fwd" if ph.endswith("forward") or ph.endswith("recompute") else "dgrad"
    else:
        g["pass"] = "activation"
    if w is not None:
        module = w.rsplit(".", 1)[0]
        g["weight"] = w
        g["role"] = module.split(".")[-1]
        mode = tp_mode(module)
        g["tp"] = {"mode": mode}
        split = _tp_split(o, g, mode)
        if split:
            g["tp"]["split"] = split
    return g


def _trans(t):
    st = t["stride"]
    sh = t["shape"]
    if len(st) < 2:
        return False
    if st[-1] == 1 and (sh[-1] != 1 or st[-2] != 1):
        return False
    return st[-2] == 1


def _tp_split(o, g, mode):
    """Which GEMM dimension a Megatron split divides (column/vocab: the weight's output features;
    row: its input features), from the weight operand's strides (fwd, dgrad) or from where the
    forward's input activation sits (wgrad)."""
    if mode not in ("column", "row", "vocab"):
        return None
    # transformers' Conv1D (GPT-2) stores its weight [in, out], nn.Linear [out, in]
    module_is_conv1d = o.get("weight_module_type") == "Conv1D"
    A, B = _operands(o)
    if g["pass"] in ("fwd", "dgrad"):
        t = A if o.get("weight_operand") == "a" else B
        st = t["stride"][-2:]
        # the parameter is row-major [R0, R1] (Linear: [out, in]); the dim with stride 1 is its axis 1
        axes = [1 if s == 1 else 0 for s in st]
        out_axis = 0 if not module_is_conv1d else 1
        want_axis = out_axis if mode in ("column", "vocab") else 1 - out_axis
        dims = ("m", "k") if o.get("weight_operand") == "a" else ("k", "n")
        for dim, ax in zip(dims, axes):
            if ax == want_axis:
                return dim
        return None
    if g["pass"] == "wgrad":
        x = o.get("wgrad_x")
        if x is None:
            return None
        # dW = dY^T X (X as operand b: C is [out, in]) or dW^T = X^T dY (X as operand a: C is [in, out])
        out_dim, in_dim = ("m", "n") if x == "b" else ("n", "m")
        return out_dim if mode in ("column", "vocab") else in_dim
    return None


def _attn_meta(o, ai, ap):
    name = base_name(o["op"])
    backend = ATTN_FWD_OPS.get(name) or ATTN_BWD_OPS.get(name)
    a = {}
    for k in ("b", "heads", "kv_heads", "s_q", "s_kv", "head_dim", "head_dim_v"):
        a[k] = int(ai[k])
        a[k + "_expr"] = _s(ap[k])
    sc = o.get("scalars", {})
    a["causal"] = bool(sc.get("is_causal", False))
    a["dropout"] = float(sc.get("dropout_p", 0.0) or 0.0)
    a["backend"] = backend
    a["dtype"] = o["in"][0]["dtype"] if name in ATTN_FWD_OPS else o["in"][1]["dtype"]
    a["masked"] = name.startswith("_scaled_dot_product_efficient") and len(o["in"]) > (4 if name in ATTN_BWD_OPS else 3)
    return a


def _finalize_list_op(e, layer_counts, layer_kind_seq):
    """A foreach/fused op over parameter lists: bytes and FLOPs as (ends) + (layers of each kind) x
    (one layer's members); kernels by multi_tensor_apply over the full model's tensors."""
    o = e["_raw"]
    lists = e["lists"]

    def part(filter_fn, use_poly):
        ins, outs, lst, mut = [], [], [], []
        for L in lists:
            mem = [t for t in L["members"] if filter_fn(t)]
            tv = _tvs(mem, use_poly)
            if L.get("output"):
                outs.extend(tv)
                continue
            idx = list(range(len(ins), len(ins) + len(tv)))
            ins.extend(tv)
            lst.append(idx)
            if L["mutated"]:
                mut.extend(tv)
        rec = dict(o, lists=lst, out_fresh=[True] * len(outs))
        if not lst:
            return {"bytes_read": 0, "bytes_written": 0, "flops": 0}
        return derive(rec, ins, outs, mut)

    kinds = sorted(layer_counts)
    totals_i = {"bytes_read": 0, "bytes_written": 0, "flops": 0}
    totals_p = {"bytes_read": Poly.const(0), "bytes_written": Poly.const(0), "flops": Poly.const(0)}
    ends_i = part(lambda t: t["group"] == "ends", False)
    ends_p = part(lambda t: t["group"] == "ends", True)
    for k in totals_i:
        totals_i[k] += ends_i[k]
        totals_p[k] = totals_p[k] + ends_p[k]
    for kind in kinds:
        li = part(lambda t, kind=kind: t["group"] == "layer" and t.get("layer_kind") == kind, False)
        lp = part(lambda t, kind=kind: t["group"] == "layer" and t.get("layer_kind") == kind, True)
        sym = Poly.sym("L") if len(kinds) == 1 else Poly.sym(f"L_{kind}")
        for k in totals_i:
            totals_i[k] += li[k] * layer_counts[kind]
            totals_p[k] = totals_p[k] + lp[k] * sym
    for k in totals_i:
        e[k] = int(totals_i[k])
        e[k + "_expr"] = _s(totals_p[k])
    depth = sum(1 for L in lists if not L.get("output")) + (1 if any(L.get("output") for L in lists) else 0)
    if base_name(o["op"]) == "_amp_foreach_non_finite_check_and_unscale_":
        depth = 1
    if e["class"] in ("foreach", "optimizer") and e["stream"] == "compute":
        e["kernels_rule"] = {"multi_tensor_apply": depth}
    else:
        e["kernels_rule"] = None
    e["kernels"] = list_op_kernels(e, layer_kind_seq)
    return e


def list_op_kernels(e, layer_kind_seq):
    """Kernels of a list op for the full model: multi_tensor_apply over the first list's tensors in
    the list's order, the layer members repeated for each layer of the model (SCHEMA.md, "Kernels")."""
    rule = e.get("kernels_rule")
    if not rule:
        return 0 if e["stream"] != "compute" else 1
    from .opinfo import multi_tensor_apply_launches
    first = e["lists"][0]["members"] if e["lists"] else []
    numels = []
    layer_done = False
    for t in first:
        if t["group"] == "ends":
            numels.append(prod(t["shape"]))
        elif not layer_done:
            for kind in layer_kind_seq:
                numels.extend(prod(u["shape"]) for u in first if u["group"] == "layer" and u.get("layer_kind") == kind)
            layer_done = True
    return multi_tensor_apply_launches(numels, rule["multi_tensor_apply"])


def finalize_buffer(b):
    lay = b.get("layout")
    if lay is not None and "_shape_p" in lay:
        isz = DTYPE_BYTES.get(lay["dtype"], 4)
        n_i = storage_numel(lay["shape"], lay["shape"], lay["stride"], lay["offset"]) * isz
        n_p = storage_numel(lay["shape"], lay["_shape_p"], lay["_stride_p"], lay["_offset_p"]) * isz
        if n_i == b["bytes"]:
            b["bytes_expr"] = _s(n_p)
        else:
            b["bytes_expr"] = None
            b["bytes_note"] = f"storage of {b['bytes']} bytes is not its defining tensor's extent ({n_i})"
    b["alloc_bytes"] = round_alloc(b["bytes"])
    return b


def strip_private(x):
    if isinstance(x, dict):
        for k in [k for k in x if k.startswith("_")]:
            if k in ("_shape_p", "_stride_p", "_offset_p"):
                continue
            del x[k]
        if "_shape_p" in x:
            x["shape_expr"] = [_s(p) for p in x.pop("_shape_p")]
            if "_stride_p" in x:
                x["stride_expr"] = [_s(p) for p in x.pop("_stride_p")]
            if "_offset_p" in x:
                x["offset_expr"] = _s(x.pop("_offset_p"))
        for v in x.values():
            strip_private(v)
    elif isinstance(x, list):
        for v in x:
            strip_private(v)
    return x
