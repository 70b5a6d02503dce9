"""Constant evaluation with the language's exact semantics (LANGUAGE.md §3, as the
backends compute it): integers wrap at their width with signedness from the type, f32
results are rounded through a 4-byte IEEE pack, f64 is Python's float.

`fold(ins)` returns a Const, or None when the result is not a compile-time fact that every
backend computes identically: division or remainder by zero, INT_MIN / -1, shifts by a
negative count or by the width or more, float min/max of NaN or of two zeros, NaN or
out-of-range float->int, float<->bool, and every math./cvt./int. intrinsic (the GPU
approximations differ from Python's libm).
"""
from __future__ import annotations

import math
import struct

from ..ir.module import Const
from ..ir.types import BoolType, FloatType, IntType, Type


def round_f32(x: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:                  # rounds past FLT_MAX: the IEEE result is inf
        return math.copysign(math.inf, x)


def normalize(t: Type, v):
    """The value a Const of type `t` holds for the mathematical result `v`."""
    if isinstance(t, IntType):
        return t.wrap(int(v))
    if isinstance(t, FloatType):
        return round_f32(v) if t.bits == 32 else float(v)
    if isinstance(t, BoolType):
        return bool(v)
    return v


def _int_binop(op: str, t: IntType, a: int, b: int):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op in ("div", "rem"):
        if b == 0 or (t.signed and b == -1 and a == -(1 << (t.bits - 1))):
            return None
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return q if op == "div" else a - q * b        # C: truncate toward zero
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    if op in ("shl", "shr"):
        if b < 0 or b >= t.bits:
            return None
        if op == "shl":
            return a << b
        return a >> b if t.signed else (a & ((1 << t.bits) - 1)) >> b
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    return None


def _float_binop(op: str, a: float, b: float):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        if b == 0 or math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
            return None                                   # keep IEEE corner cases to hardware
        return a / b
    if op in ("min", "max"):
        if math.isnan(a) or math.isnan(b) or (a == 0 and b == 0):
            return None
        return min(a, b) if op == "min" else max(a, b)
    return None


_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def fold(ins) -> Const | None:
    op, t, ops = ins.op, ins.type, ins.operands
    if not all(isinstance(o, Const) for o in ops) or not ops:
        return None
    # a float32 literal may carry more precision than float32 holds (0.1): round each
    # operand to its type first, as every backend does when it materialises the constant
    vals = [normalize(o.type, o.value) if isinstance(o.type, FloatType) else o.value
            for o in ops]
    try:
        if op in ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr",
                  "min", "max"):
            if isinstance(t, IntType):
                r = _int_binop(op, t, *vals)
            elif isinstance(t, FloatType):
                r = _float_binop(op, *vals)
            elif isinstance(t, BoolType) and op in ("and", "or", "xor"):
                r = {"and": vals[0] and vals[1], "or": vals[0] or vals[1],
                     "xor": vals[0] != vals[1]}[op]
            else:
                r = None
        elif op == "neg":
            r = -vals[0] if isinstance(t, (IntType, FloatType)) else None
        elif op == "not":
            r = (not vals[0]) if isinstance(t, BoolType) else \
                ~vals[0] if isinstance(t, IntType) else None
        elif op == "cmp":
            if not (ops[0].type.is_int or ops[0].type.is_float or ops[0].type.is_bool or
                    ops[0].type.is_ptr):
                return None
            r = _CMP[ins.attrs["pred"]](vals[0], vals[1])
        elif op == "convert":
            r = _convert(ops[0].type, t, vals[0])
        else:
            r = None
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    if r is None:
        return None
    return Const(t, normalize(t, r))


def _convert(src: Type, dst: Type, v):
    if isinstance(src, BoolType):
        if isinstance(dst, IntType):
            return int(v)
        return float(v) if isinstance(dst, FloatType) else None
    if isinstance(src, IntType):
        if isinstance(dst, IntType):
            return v
        if isinstance(dst, FloatType):
            if dst.bits == 32 and abs(v) >= 1 << 53:
                return None                              # float(v) would round twice
            return float(v)
        if isinstance(dst, BoolType):
            return v != 0
        return None
    if isinstance(src, FloatType):
        if isinstance(dst, FloatType):
            return v
        if isinstance(dst, IntType):
            if math.isnan(v) or math.isinf(v):
                return None
            r = int(v)                                   # truncation toward zero
            lo = -(1 << (dst.bits - 1)) if dst.signed else 0
            hi = (1 << (dst.bits - 1 if dst.signed else dst.bits)) - 1
            return r if lo <= r <= hi else None
    return None
