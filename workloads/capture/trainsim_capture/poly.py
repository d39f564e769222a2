"""Integer-valued polynomials in the capture's symbols (b, s, h, a, kv, ...).

Every dimension a capture records (a tensor's sizes, strides and storage offset) is written as
such a polynomial; bytes, FLOPs and GEMM/attention dimensions are computed from them with the
same code that computes them from plain integers, so a capture scales to another size of the
same architecture by evaluating its expressions (`scale.py`). The C++ side parses the same text
form (grammar in SCHEMA.md, "Expressions"):

    expr  := term (("+" | "-") term)*      e.g.  "2*b*s*h"  "s*a*d+2*s*kv*d"  "s+1"  "d/2"  "-1"
    term  := [int "*"] factor ("*" factor)* ["/" int]  |  int
    factor:= symbol ["^" int]

Coefficients are rationals (a rotary half "d/2"); every expression evaluates to an integer for
the configurations it was matched on.
"""
from fractions import Fraction
import re

_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*|\d+|[-+*/^])")


class Poly:
    """A polynomial: {monomial: Fraction}, a monomial a sorted tuple of (symbol, power)."""

    __slots__ = ("terms",)

    def __init__(self, terms=None):
        self.terms = {}
        if terms:
            for m, c in terms.items():
                c = Fraction(c)
                if c != 0:
                    self.terms[m] = self.terms.get(m, Fraction(0)) + c
                    if self.terms[m] == 0:
                        del self.terms[m]

    @staticmethod
    def const(c):
        return Poly({(): Fraction(c)})

    @staticmethod
    def sym(name):
        return Poly({((name, 1),): Fraction(1)})

    @staticmethod
    def lift(x):
        if isinstance(x, Poly):
            return x
        if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
            return Poly.const(x)
        raise TypeError(f"cannot make a polynomial of {x!r}")

    # arithmetic -------------------------------------------------------------------------------
    def __add__(self, o):
        o = Poly.lift(o)
        t = dict(self.terms)
        for m, c in o.terms.items():
            t[m] = t.get(m, Fraction(0)) + c
        return Poly(t)

    __radd__ = __add__

    def __neg__(self):
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, o):
        return self + (-Poly.lift(o))

    def __rsub__(self, o):
        return Poly.lift(o) - self

    def __mul__(self, o):
        if isinstance(o, Fraction) or (isinstance(o, int) and not isinstance(o, bool)):
            return Poly({m: c * o for m, c in self.terms.items()})
        o = Poly.lift(o)
        t = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = _mono_mul(m1, m2)
                t[m] = t.get(m, Fraction(0)) + c1 * c2
        return Poly(t)

    __rmul__ = __mul__

    def __floordiv__(self, o):
        """Exact division by an integer constant (used where the integer code divides exactly)."""
        if isinstance(o, int) and not isinstance(o, bool):
            return Poly({m: c / o for m, c in self.terms.items()})
        if isinstance(o, Poly) and o.is_const():
            return Poly({m: c / o.const_value() for m, c in self.terms.items()})
        raise TypeError("a polynomial divides only by a constant")

    def __eq__(self, o):
        try:
            o = Poly.lift(o)
        except TypeError:
            return NotImplemented
        return self.terms == o.terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    # queries ----------------------------------------------------------------------------------
    def is_const(self):
        return all(m == () for m in self.terms)

    def const_value(self):
        return self.terms.get((), Fraction(0))

    def symbols(self):
        return sorted({s for m in self.terms for s, _ in m})

    def degree(self):
        return max((sum(p for _, p in m) for m in self.terms), default=0)

    def evaluate(self, values):
        total = Fraction(0)
        for m, c in self.terms.items():
            v = c
            for s, p in m:
                if s not in values:
                    raise KeyError(f"symbol {s!r} has no value")
                v *= Fraction(values[s]) ** p
            total += v
        if total.denominator != 1:
            raise ValueError(f"{self} is not an integer at {values}: {total}")
        return int(total)

    def __str__(self):
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda mc: _term_order(mc[0])):
            parts.append(_fmt_term(m, c))
        s = parts[0]
        for p in parts[1:]:
            s += p if p.startswith("-") else "+" + p
        return s

    __repr__ = __str__


def _mono_mul(m1, m2):
    d = dict(m1)
    for s, p in m2:
        d[s] = d.get(s, 0) + p
    return tuple(sorted(d.items()))


# Symbol order in printed expressions (unknown symbols after these, alphabetically).
SYMBOL_ORDER = ["b", "s", "h", "a", "kv", "g", "d", "f", "V", "P", "E"]


def _sym_rank(s):
    return (SYMBOL_ORDER.index(s), s) if s in SYMBOL_ORDER else (len(SYMBOL_ORDER), s)


def _term_order(m):
    # higher degree first, then by symbol order: "s*a*d+2*s*kv*d", "s+1"
    return (-sum(p for _, p in m), [(_sym_rank(s), -p) for s, p in m])


def _fmt_term(m, c):
    if not m:
        return _fmt_frac(c)
    factors = "*".join(s if p == 1 else f"{s}^{p}" for s, p in sorted(m, key=lambda sp: _sym_rank(sp[0])))
    num, den = c.numerator, c.denominator
    sign = "-" if num < 0 else ""
    num = abs(num)
    s = sign + (f"{num}*" if num != 1 else "") + factors
    if den != 1:
        s += f"/{den}"
    return s


def _fmt_frac(c):
    return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"


def _int_after(toks, pos, text):
    """The integer after the operator at toks[pos] ("^" or "/"); ValueError where there is none."""
    if pos + 1 >= len(toks) or not toks[pos + 1].isdigit():
        raise ValueError(f"bad expression {text!r}: an integer expected after {toks[pos]!r}")
    return int(toks[pos + 1])


def parse(text):
    """Inverse of str(Poly) (and of anything the grammar in the module docstring allows)."""
    if isinstance(text, int):
        return Poly.const(text)
    toks = _TOKEN.findall(text)
    if "".join(toks) != re.sub(r"\s+", "", text):
        raise ValueError(f"bad expression {text!r}")
    pos = 0
    result = Poly()
    sign = 1
    if toks and toks[0] in "+-":
        sign = -1 if toks[0] == "-" else 1
        pos = 1
    while True:
        coef = Fraction(sign)
        mono = {}
        while True:
            if pos >= len(toks):
                raise ValueError(f"bad expression {text!r}")
            t = toks[pos]
            pos += 1
            if t.isdigit():
                coef *= int(t)
            elif re.match(r"[A-Za-z_]", t):
                p = 1
                if pos < len(toks) and toks[pos] == "^":
                    p = _int_after(toks, pos, text)
                    pos += 2
                mono[t] = mono.get(t, 0) + p
            else:
                raise ValueError(f"bad expression {text!r}")
            if pos < len(toks) and toks[pos] == "*":
                pos += 1
                continue
            if pos < len(toks) and toks[pos] == "/":
                divisor = _int_after(toks, pos, text)
                if divisor == 0:
                    raise ValueError(f"bad expression {text!r}: division by zero")
                coef /= divisor
                pos += 2
            break
        result = result + Poly({tuple(sorted(mono.items())): coef})
        if pos >= len(toks):
            return result
        if toks[pos] not in "+-":
            raise ValueError(f"bad expression {text!r}")
        sign = -1 if toks[pos] == "-" else 1
        pos += 1


def evaluate(expr, values):
    """Evaluates an expression string (or int) with integer symbol values."""
    return parse(expr).evaluate(values) if isinstance(expr, str) else int(expr)
