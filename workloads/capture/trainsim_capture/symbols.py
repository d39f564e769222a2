"""Which expression in the model's symbols each captured dimension is.

The capture runs the same architecture at three generic sizes (A, B, C: every independent
symbol has a different value at each, none of them small) and at the requested size T. For each
dimension slot (a tensor's size, stride or storage offset, in a fixed traversal order) the four
values must be one polynomial's values at the four symbol points. Candidates, simplest first:
  a constant;  c*m + k;  c1*m1 + c2*m2 + k
with m a monomial of degree <= 4 in the symbols, c in COEFFS (rationals: a rotary half is "d/2", the
inverse frequencies of GPT-NeoX's quarter rotary are "d/8"),
k in -2..2. A slot with no candidate, or with two candidates that differ at some point allowed by
the architecture's ties (e.g. a = kv*g), is refused (`SymbolError`): the capture cannot be scaled
by shape. Candidates equal at every allowed point (h and a*d where the architecture ties them)
are the same dimension; the simplest is written (fewer terms, lower degree, SYMBOL_ORDER).
"""
import itertools
import random
from fractions import Fraction

from .poly import Poly, SYMBOL_ORDER, parse

# eighths up to 3: GPT-NeoX's quarter rotary slices a fused q/k/v row at d + d/4 and d + d/8
COEFFS = [Fraction(x) for x in (1, 2, 3, 4, 5, 6, 8, 12, 16)] + [Fraction(-1), Fraction(-2)] + \
         [Fraction(k, 8) for k in range(1, 25) if k % 8]
CONSTS = (0, 1, -1, 2, -2)
MAX_DEGREE = 4


class SymbolError(Exception):
    pass


# Generic values of the independent symbols at the points A, B, C (SCHEMA.md, "Symbols"). Every
# symbol differs between points, so a dimension that is constant across them is a constant.
GENERIC = {
    # chosen by a search for three points at which no two monomials of degree <= 4 in these symbols,
    # with coefficients from COEFFS, agree unless the ties make them equal (so a dimension matches
    # one expression); P > s at every point (learned positions), h != a*d (head width independent)
    "b": (4, 3, 5),
    # s: multiples of 32, as the memory-efficient SDPA kernel pads its log-sum-exp ([b, a,
    # round_up(s, 32)]: a dimension no polynomial gives at other lengths); checked as above
    "s": (224, 96, 160),
    "h": (48, 64, 128),
    "a": (5, 7, 4),       # when heads are independent (no grouped-query ties)
    "kv": (6, 2, 3),
    "g": (2, 3, 2),       # query heads per key/value head: a = kv*g = 12, 6, 6
    "d": (16, 40, 56),
    "f": (112, 96, 48),
    "V": (97, 123, 81),
    "P": (288, 160, 224),
}


class SymbolSpace:
    """Symbols of one architecture: independent ones and ties (derived = expression of others)."""

    def __init__(self, independent, ties=None, fixed=None):
        self.independent = list(independent)
        self.ties = dict(ties or {})            # name -> expression text in other symbols
        self.fixed = dict(fixed or {})          # name -> int (an architectural constant, e.g. kv = 1)
        self._tie_polys = {k: parse(v) for k, v in self.ties.items()}

    def names(self):
        return sorted(set(self.independent) | set(self.ties), key=_rank)

    def complete(self, values):
        """Adds the tied symbols' values to a dict of independent values."""
        v = dict(values)
        v.update(self.fixed)
        for _ in range(len(self.ties) + 1):
            for k, p in self._tie_polys.items():
                try:
                    v[k] = p.evaluate(v)
                except KeyError:
                    pass
        v.update(self.fixed)
        return v

    def generic_point(self, k, overrides=None):
        vals = {}
        for s in self.independent:
            if overrides and s in overrides:
                vals[s] = overrides[s][k]
            elif s in GENERIC:
                vals[s] = GENERIC[s][k]
            else:
                raise SymbolError(f"no generic values for symbol {s!r}")
        return self.complete(vals)

    def random_points(self, n, seed=1234):
        rng = random.Random(seed)
        pts = []
        for _ in range(n):
            vals = {s: rng.randint(7, 97) for s in self.independent}
            pts.append(self.complete(vals))
        return pts

    def tie_equal(self, values):
        """The same space with every independent symbol whose value at `values` equals an earlier
        one's tied to it (P = s when the sequence fills the positions): PyTorch skips a slice that
        spans a whole dimension (torch/csrc/autograd/python_variable_indexing.h, applySlicing), so a
        model slicing a [P, P] mask to [s, s] runs one op fewer where s = P. None when no two are equal."""
        ties, indep = dict(self.ties), []
        for name in sorted(self.independent, key=_rank):
            twin = next((o for o in indep if o != "b" and values.get(o) == values.get(name)), None)
            if name != "b" and twin is not None:
                ties[name] = twin
            else:
                indep.append(name)
        if len(indep) == len(self.independent):
            return None
        return SymbolSpace(indep, ties, self.fixed)

    def describe(self):
        return {"independent": self.independent, "ties": self.ties, "fixed": self.fixed}


def _rank(s):
    return (SYMBOL_ORDER.index(s), s) if s in SYMBOL_ORDER else (len(SYMBOL_ORDER), s)


def _monomials(names):
    monos = []
    for deg in range(1, MAX_DEGREE + 1):
        for combo in itertools.combinations_with_replacement(names, deg):
            d = {}
            for s in combo:
                d[s] = d.get(s, 0) + 1
            monos.append(tuple(sorted(d.items())))
    return monos


def _mono_value(m, pt):
    v = 1
    for s, p in m:
        v *= pt[s] ** p
    return v


def _term_key(c, m):
    return (len(m) and sum(p for _, p in m), abs(c.numerator) * c.denominator, c < 0, [(_rank(s), p) for s, p in m])


class Matcher:
    def __init__(self, space, points):
        """points: list of complete symbol dicts (A, B, C, T ...), in the order values are given."""
        self.space = space
        self.points = points
        self.names = [n for n in space.names() if n not in space.fixed]
        self.monos = _monomials(self.names)
        # term table at point 0: value -> [(coef, mono)]
        self.terms = []
        for m in self.monos:
            mv = [_mono_value(m, p) for p in points]
            for c in COEFFS:
                vals = [c * x for x in mv]
                if all(v.denominator == 1 for v in vals):
                    self.terms.append((c, m, tuple(int(v) for v in vals)))
        self.by_value = {}
        for t in self.terms:
            self.by_value.setdefault(t[2][0], []).append(t)
        self.checks = space.random_points(6)
        self.cache = {}

    def match(self, values, what=""):
        values = tuple(int(v) for v in values)
        if values in self.cache:
            return self.cache[values]
        r = self._match(values, what)
        self.cache[values] = r
        return r

    def _match(self, values, what):
        if len(set(values)) == 1:
            return Poly.const(values[0])
        n = len(values)
        found = []
        for k in CONSTS:
            for c, m, tv in self.by_value.get(values[0] - k, ()):
                if all(tv[i] + k == values[i] for i in range(1, n)):
                    found.append(Poly({m: c, (): Fraction(k)}))
        if not found:
            for k in CONSTS:
                for c1, m1, tv1 in self.terms:
                    r0 = values[0] - k - tv1[0]
                    for c2, m2, tv2 in self.by_value.get(r0, ()):
                        if m2 <= m1:
                            continue
                        if all(tv1[i] + tv2[i] + k == values[i] for i in range(1, n)):
                            found.append(Poly({m1: c1, m2: c2, (): Fraction(k)}))
                if found:
                    break
        if not found:
            raise SymbolError(f"dimension {what or ''} with values {list(values)} at the symbol points "
                              f"{self._pts()} is no polynomial of degree <= {MAX_DEGREE} with at most two terms "
                              "in the symbols: the capture cannot be scaled by shape")
        return self._choose(found, values, what)

    def _choose(self, found, values, what):
        classes = []
        for p in found:
            sig = tuple(_eval_or_none(p, c) for c in self.checks)
            for cl in classes:
                if cl[0] == sig:
                    cl[1].append(p)
                    break
            else:
                classes.append((sig, [p]))
        if len(classes) > 1:
            alts = ", ".join(str(min(cl[1], key=_poly_key)) for cl in classes[:4])
            raise SymbolError(f"dimension {what or ''} with values {list(values)} is ambiguous: {alts} "
                              "match at every capture point but differ elsewhere")
        return min(classes[0][1], key=_poly_key)

    def _pts(self):
        return [{k: p[k] for k in self.names} for p in self.points]


def _eval_or_none(p, pt):
    try:
        return p.evaluate(pt)
    except (ValueError, KeyError):
        return None


def _poly_key(p):
    terms = [(m, c) for m, c in p.terms.items() if m]
    return (len(terms), p.degree(), sum(abs(c.numerator) * c.denominator for _, c in terms),
            sorted((sorted(_rank(s) for s, _ in m) for m, _ in terms)), str(p))
