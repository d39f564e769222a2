"""Deterministic JSON: sorted keys, integers as integers, floats by repr, one record per line."""
import json
import os
import stat

from .errors import CaptureError

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


def write_text(path, text):
    """Writes `text` to `path` whole or not at all: into a temporary file beside it, then renamed
    over it, so a run stopped mid-write or two runs writing one path leave a complete file, and a
    symbolic link at the path is replaced, not written through."""
    try:
        st = os.stat(path)  # through a link: its target decides
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise CaptureError("expected a regular file or the name of a new one as the output, got "
                           + ("a directory" if stat.S_ISDIR(st.st_mode) else "a device, pipe or socket"), file=path)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise CaptureError(f"cannot write the output: {e.strerror or e}", file=path) from e
        raise


def write(doc, path):
    text = dumps(doc)
    write_text(path, text)
    return text
