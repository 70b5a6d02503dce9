"""Facts about IR operations that several passes and the edit API share (one definition,
so no pass imports another's tables).

PURE: the ops with no effect whose result depends only on their operands (gvn numbers
them, licm hoists the speculation-safe ones, edit.is_pure and load-ahead's and
tensor-residency's checks read it).
"""
from __future__ import annotations

PURE = frozenset((
    "add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max",
    "neg", "not", "cmp", "select", "convert", "bitcast", "ptrtoint", "inttoptr",
    "addrspacecast", "ptradd", "byteadd", "fieldptr", "gpu.index",
    "cvt.h2f", "cvt.f2h", "cvt.bf2f", "cvt.f2bf", "int.dp4a", "int.dp2a", "int.prmt",
    "half2.add", "half2.mul", "half2.fma", "half2.lo", "half2.hi", "half2.pack",
    *(f"math.{n}" for n in ("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp")),
))
