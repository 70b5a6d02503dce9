"""Compile-time evaluation of constant expressions (case values, enum values, global
initializers, folded consts, array sizes of built-ins, divide-by-zero detection).

`const_value(expr, lookup)` returns a Python int/float/bool, or NOT_CONST when the expression
is not a compile-time constant. `lookup(name)` returns a symbol (scope.VarSym whose storage
is a Python number for folded consts) or None. A constant division by zero raises
`ConstDivZero` so callers can report M0116 at the right span.
"""
from __future__ import annotations

import math

from . import ast as A
from .scope import TypeSym, VarSym
from .typesys import BUILTIN_TYPES

NOT_CONST = object()


class ConstDivZero(Exception):
    def __init__(self, span):
        super().__init__("constant divide by zero")
        self.span = span


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_INT_OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b if 0 <= b < 64 else NOT_CONST,
    ">>": lambda a, b: a >> b if 0 <= b < 64 else NOT_CONST,
}
_CMP_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def const_value(e: A.Expr, lookup):
    """Evaluate `e` at compile time, or return NOT_CONST."""
    if isinstance(e, A.BoolLit):
        return bool(e.value)
    if isinstance(e, (A.IntLit, A.FloatLit)):
        return e.value
    if isinstance(e, A.Name):
        sym = lookup(e.name)
        if isinstance(sym, VarSym) and sym.kind == "const" and \
                isinstance(sym.storage, (int, float)):
            return sym.storage
        return NOT_CONST
    if isinstance(e, A.SizeOf):
        # the lookup is a bound method of the checker (program or function level), which
        # resolves types; a plain lookup function cannot, so sizeof is not constant there
        owner = getattr(lookup, "__self__", None)
        return owner.sizeof_const(e.type) if hasattr(owner, "sizeof_const") else NOT_CONST
    if isinstance(e, A.Member) and isinstance(e.base, A.Name):
        return enum_variant_value(e, lookup)
    if isinstance(e, A.Unary):
        v = const_value(e.operand, lookup)
        if v is NOT_CONST:
            return v
        if e.op == "-":
            return -v
        if e.op == "+":
            return v
        if e.op == "~":
            return ~v if isinstance(v, int) and not isinstance(v, bool) else NOT_CONST
        if e.op == "!":
            return not v
        return NOT_CONST
    if isinstance(e, A.Binary):
        return _binary(e, lookup)
    if isinstance(e, A.Cast) and isinstance(e.type, A.NamedType):
        v = const_value(e.expr, lookup)
        t = BUILTIN_TYPES.get(e.type.name)
        if v is NOT_CONST or t is None:
            return NOT_CONST
        if t.is_int:
            return t.wrap(int(v))
        if t.is_float:
            return float(v)
        return NOT_CONST
    return NOT_CONST


def enum_variant_value(e: A.Member, lookup):
    """`Color.Red`: the value of variant Red of plain enum Color, or NOT_CONST."""
    owner = lookup(e.base.name)
    if not (isinstance(owner, TypeSym) and owner.enum is not None):
        return NOT_CONST
    sym = lookup(e.name)
    if isinstance(sym, VarSym) and sym.enum == owner.enum and sym.kind == "const":
        return sym.storage
    return NOT_CONST


def _ieee_div_by_zero(a: float, b: float) -> float:
    """IEEE 754: x / ±0 is ±inf with the sign of x times the sign of the zero; 0/0 is NaN.
    (Giving up on it left the constant to be lowered in its context's integer type.)"""
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _binary(e: A.Binary, lookup):
    a = const_value(e.left, lookup)
    if a is NOT_CONST:
        return a
    if e.op in ("&&", "||"):
        if e.op == "&&" and not a:
            return False
        if e.op == "||" and a:
            return True
        b = const_value(e.right, lookup)
        return NOT_CONST if b is NOT_CONST else bool(b)
    b = const_value(e.right, lookup)
    if b is NOT_CONST:
        return b
    if e.op in _CMP_OPS:
        return _CMP_OPS[e.op](a, b)
    is_float = isinstance(a, float) or isinstance(b, float)
    if e.op in ("/", "%"):
        if b == 0 and not is_float:
            raise ConstDivZero(e.right.span)
        if b == 0 and e.op == "/":
            return _ieee_div_by_zero(float(a), float(b))
        if b == 0:
            return NOT_CONST
        if is_float:
            return a / b if e.op == "/" else NOT_CONST
        q = _c_div(int(a), int(b))
        return q if e.op == "/" else int(a) - q * int(b)
    if e.op in ("+", "-", "*"):
        return _INT_OPS[e.op](a, b)
    if is_float or e.op not in _INT_OPS:
        return NOT_CONST
    return _INT_OPS[e.op](int(a), int(b))
