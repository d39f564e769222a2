"""Memory replay of a capture document for a model of any layer count (what the C++ side mirrors).

The step runs its phases in this order (`timeline`):
  embed.forward; layer.forward of layers 0..L-1; head.forward; head.backward;
  layer.backward of layers L-1..0 (a checkpointed layer's recompute runs inside it, before its
  backward op number `recompute_at`); embed.backward; optimizer (segments in order; a "layers"
  segment runs its layer kind's body once per layer, in layer order).
At each op: its buffers are allocated (allocator-rounded bytes), the live total is compared with
the peak, then the buffers freed after it are released ("op": -1 frees at the phase's start).
Buffers with no "alloc" exist before the step (parameters, optimizer states, inputs), once per
layer of their kind when their owner is "layer".
"""


def expand_kinds(doc, layers=None, kinds=None):
    if kinds is not None:
        return list(kinds)
    seq = []
    for k, n in doc["model"]["layer_sequence"]:
        seq += [k] * n
    if layers is not None:
        if len(set(seq)) != 1:
            raise ValueError("layers= needs a model of one layer kind; give kinds=")
        seq = [seq[0]] * layers
    return seq


def timeline(doc, kinds):
    """[(phase, layer index or None, op index, recompute flag)] and each occurrence's start."""
    by_kind = {L["kind"]: L for L in doc["layers"]}
    ops = []
    start = {}

    def occ(phase, li, n, tag=None):
        start.setdefault((phase, li), len(ops))
        for k in range(n):
            ops.append((phase, li, k, tag))

    occ("embed.forward", None, len(doc["phases"]["embed.forward"]["ops"]))
    for i, k in enumerate(kinds):
        occ("layer.forward", i, len(by_kind[k]["phases"]["forward"]["ops"]))
    occ("head.forward", None, len(doc["phases"]["head.forward"]["ops"]))
    occ("head.backward", None, len(doc["phases"]["head.backward"]["ops"]))
    for i in reversed(range(len(kinds))):
        L = by_kind[kinds[i]]
        nb = len(L["phases"]["backward"]["ops"])
        nr = len(L["phases"]["recompute"]["ops"])
        at = L["recompute_at"] if nr else None
        start.setdefault(("layer.backward", i), len(ops))
        for k in range(nb + 1):
            if at is not None and k == at:
                start.setdefault(("layer.recompute", i), len(ops))
                for r in range(nr):
                    ops.append(("layer.recompute", i, r, None))
            if k < nb:
                ops.append(("layer.backward", i, k, None))
        if ("layer.recompute", i) not in start:
            start[("layer.recompute", i)] = len(ops)
    occ("embed.backward", None, len(doc["phases"]["embed.backward"]["ops"]))
    opt = doc["phases"]["optimizer"]
    start.setdefault(("optimizer", None), len(ops))
    for s, seg in enumerate(opt["segments"]):
        if seg["group"] == "layers":
            for i, k in enumerate(kinds):
                body = seg["bodies"].get(k, {"ops": []})["ops"]
                start.setdefault(("optseg", s, i), len(ops))
                for n in range(len(body)):
                    ops.append(("optimizer", (s, i), n, None))
        else:
            start.setdefault(("optseg", s, None), len(ops))
            for n in range(len(seg["ops"])):
                ops.append(("optimizer", (s, None), n, None))
    index = {(p, li, k): t for t, (p, li, k, _) in enumerate(ops)}
    return ops, index, start


def _layer_of(pos, base_layer, nl):
    if "layer_offset" in pos:
        return base_layer + pos["layer_offset"]
    if "layer_index" in pos:
        j = pos["layer_index"]
        return j if j >= 0 else nl + j
    return base_layer


def _resolve(pos, base_layer, kinds, index, start, rep=None, after=False):
    """Timeline index of an alloc (the op) or free (after the op) position; None if not in the step."""
    nl = len(kinds)
    ph = pos["phase"]
    op = pos["op"]
    if ph == "optimizer":
        seg = pos.get("segment")
        li = rep if rep is not None else None
        if "layer_offset" in pos:
            li = None if rep is None else rep + pos["layer_offset"]
            if li is None or li < 0 or li >= nl:
                return None
        elif "layer_index" in pos:
            j = pos["layer_index"]
            li = j if j >= 0 else nl + j
        key = (seg, li)
        if ("optimizer", key, op) not in index:
            key = (seg, None)
        if ("optimizer", key, op) not in index:
            # a layers segment position for a buffer not per repetition: its last repetition
            key = (seg, nl - 1)
        if op == -1:
            return start.get(("optseg", seg, key[1]), start[("optimizer", None)]) - 1
        return index.get(("optimizer", key, op))
    if ph.startswith("layer."):
        li = _layer_of(pos, base_layer, nl)
        if li is None or li < 0 or li >= nl:
            return None
    else:
        li = None
    if op == -1:
        return start[(ph, li)] - 1
    return index.get((ph, li, op))


def events(doc, layers=None, kinds=None):
    """(timeline, alloc, free, base): bytes allocated at each op, freed after each op
    (free[t + 1] after op t; free[0] before the first), and the bytes existing before the step."""
    kinds = expand_kinds(doc, layers, kinds)
    nl = len(kinds)
    ops, index, start = timeline(doc, kinds)
    n = len(ops)
    alloc = [0] * n
    free = [0] * (n + 1)
    base = 0
    count_kind = {}
    for k in kinds:
        count_kind[k] = count_kind.get(k, 0) + 1
    unplaced = 0
    for b in doc["buffers"]:
        nbytes = b["alloc_bytes"]
        if b.get("alloc") is None:
            base += nbytes * (count_kind.get(b.get("layer_kind"), 0) if b.get("owner") == "layer" else 1)
            continue
        if b["owner"] == "layer":
            inst = [i for i, k in enumerate(kinds) if k == b["layer_kind"]]
        else:
            inst = [None]
        mult = count_kind.get(b["per_layer"], 0) if b.get("per_layer") else 1
        for i in inst:
            if b["owner"] == "optimizer" and b.get("per_repetition"):
                reps = [j for j, k in enumerate(kinds) if k == b["layer_kind"]]
            else:
                reps = [None]
            for r in reps:
                ta = _resolve(b["alloc"], i, kinds, index, start, rep=r)
                if ta is None:
                    unplaced += 1
                    continue
                fpos = b.get("free")
                j = i if i is not None else r
                if j is not None and j == 0 and "free_first" in b:
                    fpos = b["free_first"]
                elif j is not None and j == nl - 1 and "free_last" in b:
                    fpos = b["free_last"]
                alloc[ta] += nbytes * mult
                if fpos is not None:
                    tf = _resolve(fpos, i, kinds, index, start, rep=r, after=True)
                    if tf is not None and tf >= ta:
                        free[tf + 1] += nbytes * mult
    return ops, alloc, free, base, unplaced


def replay(doc, layers=None, kinds=None):
    ops, alloc, free, base, unplaced = events(doc, layers, kinds)
    nl = len(expand_kinds(doc, layers, kinds))
    n = len(ops)
    mem = base - free[0]
    peak, peak_t = mem, -1
    for t in range(n):
        mem += alloc[t]
        if mem > peak:
            peak, peak_t = mem, t
        mem -= free[t + 1]
    at = None
    if peak_t >= 0:
        p, li, k, _ = ops[peak_t]
        if p == "optimizer":
            at = {"phase": p, "segment": li[0], "op": k}
            if li[1] is not None:
                at["layer"] = li[1]
        else:
            at = {"phase": p, "op": k}
            if li is not None:
                at["layer"] = li
    return {"layers": nl, "base_bytes": base, "peak_bytes": peak, "peak_at": at, "end_bytes": mem,
            "unplaced_buffers": unplaced}


def totals(doc):
    """Sums of FLOPs, bytes and kernels per phase (one layer of each kind) and for the whole step."""
    def add(acc, ops):
        for o in ops:
            for k in ("flops", "bytes_read", "bytes_written", "kernels"):
                acc[k] = acc.get(k, 0) + int(o.get(k, 0) or 0)
        return acc

    out = {"ends": {}, "layers": {}, "optimizer": {}}
    for ph in ("embed.forward", "head.forward", "head.backward", "embed.backward"):
        out["ends"][ph] = add({}, doc["phases"][ph]["ops"])
    counts = doc["model"]["layer_counts"]
    step = {}
    for ph, v in out["ends"].items():
        for k, x in v.items():
            step[k] = step.get(k, 0) + x
    for L in doc["layers"]:
        per = {ph: add({}, L["phases"][ph]["ops"]) for ph in ("forward", "recompute", "backward")}
        out["layers"][L["kind"]] = per
        for v in per.values():
            for k, x in v.items():
                step[k] = step.get(k, 0) + x * counts.get(L["kind"], 0)
    opt = {}
    for seg in doc["phases"]["optimizer"]["segments"]:
        if seg["group"] == "layers":
            for kind, body in seg["bodies"].items():
                tmp = add({}, body["ops"])
                for k, x in tmp.items():
                    opt[k] = opt.get(k, 0) + x * counts.get(kind, 0)
        else:
            add(opt, seg["ops"])
    out["optimizer"] = opt
    for k, x in opt.items():
        step[k] = step.get(k, 0) + x
    out["step"] = step
    return out


def direct_peak(raw):
    """The peak of a raw recording as it ran (steady state: optimizer states exist from the start,
    the first optimizer step's ops are left out), for testing `replay` at the captured layer count."""
    from .emit import round_alloc
    ops = raw.ops
    keep = [g for g, o in enumerate(ops) if o["occ"][0] not in ("optimizer.first", "setup", "end")]
    pos = {g: t for t, g in enumerate(keep)}
    n = len(keep)
    alloc = [0] * n
    free = [0] * (n + 1)
    base = 0
    for b in raw.buffers:
        nb = round_alloc(b.nbytes)
        if b.kind == "optimizer_state" or b.alloc is None:
            base += nb
            continue
        if b.producer not in pos:
            continue
        ta = pos[b.producer]
        alloc[ta] += nb
        if b.free is not None and not b.freed_by_gc and b.free[0][0] not in ("end", "optimizer.first"):
            g = b.free_g
            while g >= 0 and g not in pos:
                g -= 1
            tf = pos[g] if g >= 0 else -1
            free[tf + 1] += nb
    mem = base - free[0]
    peak = mem
    for t in range(n):
        mem += alloc[t]
        peak = max(peak, mem)
        mem -= free[t + 1]
    return {"peak_bytes": peak, "base_bytes": base, "end_bytes": mem, "alloc": alloc, "free": free,
            "ops": [(ops[g]["occ"], ops[g]["idx"]) for g in keep]}
