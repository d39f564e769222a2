"""Deterministic JSON: sorted keys, integers as integers, floats by repr, one record per line."""
import json

_RECORD_KEYS = ("op", "id", "name")


def _compact(x):
    return json.dumps(x, sort_keys=True, separators=(",", ":"), allow_nan=False)


def dumps(doc):
    out = []

    def w(x, ind):
        pad = " " * ind
        if isinstance(x, dict):
            if not x:
                return "{}"
            if any(k in x for k in _RECORD_KEYS) and ind >= 2 or len(_compact(x)) <= 100:
                return _compact(x)
            items = [f'{pad} {json.dumps(k)}: {w(x[k], ind + 1)}' for k in sorted(x)]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(x, list):
            if not x:
                return "[]"
            if all(not isinstance(v, (dict, list)) for v in x) or len(_compact(x)) <= 100:
                return _compact(x)
            items = [f"{pad} {w(v, ind + 1)}" for v in x]
            return "[\n" + ",\n".join(items) + "\n" + pad + "]"
        return json.dumps(x, allow_nan=False)

    out.append(w(doc, 0))
    return "\n".join(out) + "\n"


def write(doc, path):
    text = dumps(doc)
    with open(path, "w") as f:
        f.write(text)
    return text
