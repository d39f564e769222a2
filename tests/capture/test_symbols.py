#!/usr/bin/env python3
"""Expressions and the symbol matcher: printing and parsing round-trip, the matcher finds the
expression a dimension is, refuses a dimension two expressions explain, and the kernel count rule
of multi_tensor_apply against counts worked by hand."""
import _common

_common.require_torch()
from trainsim_capture.opinfo import multi_tensor_apply_launches  # noqa: E402
from trainsim_capture.poly import Poly, parse  # noqa: E402
from trainsim_capture.symbols import Matcher, SymbolSpace, SymbolError  # noqa: E402

c = _common.Checks("test_symbols")
for text in ("b*s*h", "s*a*d+2*s*kv*d", "s+1", "d/2", "-1", "0", "2*b*s^2*a", "3*h/4-2"):
    c.eq(str(parse(text)), text, f"parse/print round trip {text}")
c.eq(parse("b*s*h").evaluate({"b": 2, "s": 3, "h": 5}), 30, "evaluate")
b, s = Poly.sym("b"), Poly.sym("s")
c.eq(str((b + 1) * (s - 1)), "b*s-b+s-1", "arithmetic")

space = SymbolSpace(["b", "s", "h", "kv", "g", "d", "f", "V"], {"a": "kv*g"})
pts = [space.generic_point(k) for k in range(3)]
target = space.complete({"b": 1, "s": 4096, "h": 8192, "kv": 8, "g": 8, "d": 128, "f": 28672, "V": 128256})
m = Matcher(space, pts + [target])


def vals(e):
    p = parse(e)
    return [p.evaluate(x) for x in pts + [target]]


for e in ("b*s*h", "s*a*d+2*s*kv*d", "2*f", "b*s^2*a", "d/2", "d/8", "s+1", "a", "h*V", "7"):
    c.eq(str(m.match(vals(e))), e, f"matched {e}")
c.eq(str(m.match(vals("kv*g*d"))), "a*d", "tied forms are one dimension, written the simplest way")
try:
    m.match([11, 12, 13, 14])
    c.check(False, "an inexpressible dimension is refused")
except SymbolError as e:
    c.check("cannot be scaled" in str(e), "an inexpressible dimension is refused", str(e))
# two symbols with the same value at every capture point: ambiguous
sp2 = SymbolSpace(["x", "y"], {})
m2 = Matcher(sp2, [{"x": 5, "y": 5}, {"x": 7, "y": 7}, {"x": 11, "y": 11}])
try:
    m2.match([5, 7, 11])
    c.check(False, "an ambiguous dimension is refused")
except SymbolError as e:
    c.check("ambiguous" in str(e), "an ambiguous dimension is refused", str(e))

# multi_tensor_apply (kChunkSize 65536, 320 blocks, 110 tensors at depth 1, 36 at depth 4)
c.eq(multi_tensor_apply_launches([10] * 110, 1), 1, "110 small tensors, depth 1: one launch")
c.eq(multi_tensor_apply_launches([10] * 111, 1), 2, "111 small tensors, depth 1: two launches")
c.eq(multi_tensor_apply_launches([10] * 37, 4), 2, "37 small tensors, depth 4: two launches")
c.eq(multi_tensor_apply_launches([65536 * 320], 4), 1, "320 chunks: one launch")
c.eq(multi_tensor_apply_launches([65536 * 320 + 1], 4), 2, "321 chunks: two launches")
c.eq(multi_tensor_apply_launches([8192 * 28672], 4), 12, "an 8192 x 28672 weight: 3584 chunks, 12 launches")
# text the grammar does not allow is a ValueError (trainsim_capture --check exits 2), never an IndexError
for bad in ("b^", "d/", "b/0", "*b", "b+"):
    try:
        parse(bad)
        c.check(False, f"{bad!r} is refused")
    except ValueError:
        c.check(True, f"{bad!r} is refused")
c.done()
