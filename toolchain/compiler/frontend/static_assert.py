"""`static_assert(cond)` at top level and as a statement (E0017).

The condition goes through the same constant folder as a top-level `const` (consteval.py:
literals, integer consts, enum variants, `sizeof(T)`, arithmetic, comparisons, logic and the
bitwise/shift operators), so `static_assert((N & 1) == 0)` works. Zero fails the build.
"""
from __future__ import annotations

from . import ast as A
from .consteval import NOT_CONST


def check_static_assert(s: A.StaticAssert, fold, error) -> None:
    """`fold(expr)` is the caller's constant evaluator (NOT_CONST when not constant);
    `error(code, msg, span)` records a diagnostic."""
    if len(s.args) != 1:
        error("E0017", f"static_assert expects exactly one condition, found {len(s.args)}",
              s.span)
        return
    v = fold(s.args[0])
    if v is NOT_CONST or v is None or isinstance(v, float):
        error("E0017", "static_assert condition must be a compile-time integer expression",
              s.args[0].span)
    elif not v:
        error("E0017", "static_assert failed", s.args[0].span)
