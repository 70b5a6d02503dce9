"""Run-time checks of host code (LANGUAGE §7; docs/reference/runtime-checks.md).

A non-release host build checks, before the access or the operation:
- an index into a fixed-size array or a string: 0 <= index < length (`check.index`);
- the pointer of `*p`, `p[i]`, `p.f`, `p->f` (and `&` of those): not null (`check.null`);
- the divisor of an integer `/` or `%`: not zero (`check.nonzero`);
- the function value of an indirect call: not null (`check.null`, what=call).
Each is one target-neutral IR instruction carrying its source location ("file:line:col");
ir/checks.py expands it after -O, which removes the redundant ones (opt/check_hoist.py).
Kernels and device helpers get none, and neither does a `--release` build. Checks that hold
at compile time (a constant index inside the array, a nonzero constant divisor, the address
of a variable) are not emitted.
"""
from __future__ import annotations

import os

from ..ir import Global
from ..ir.module import Const, Function, Instr
from ..ir.types import I64

# Pointers that are never null: the address of a variable or of a constant.
_NONNULL_OPS = frozenset(("alloca", "fieldptr", "elemptr"))


class ChecksMixin:
    @property
    def checking(self) -> bool:
        return self.ctx.checks and not self.device

    @staticmethod
    def check_site(span) -> str:
        return f"{_shown_path(span.file)}:{span.line}:{span.col}"

    def check_access(self, base, count, index, const_index, span) -> None:
        """Before `base[index]`: `count` is the array's element count (int), a string's
        length (a value), or None for a plain pointer (checked for null only)."""
        if not self.checking:
            return
        if count is None:
            self.check_null(base, span)
        elif isinstance(count, int):
            if const_index is None or not 0 <= const_index < count:
                self.b.check("check.index", [index, self.b.const(I64, count)],
                             self.check_site(span), span=span)
        else:
            self.b.check("check.index", [index, self.b.convert(count, I64)],
                         self.check_site(span), span=span)

    def check_null(self, p, span, **what) -> None:
        if not self.checking or isinstance(p, (Global, Function)) or \
                (isinstance(p, Instr) and p.op in _NONNULL_OPS):
            return
        if isinstance(p, Const) and p.value != 0:
            return
        self.b.check("check.null", [p], self.check_site(span), span=span, **what)

    def check_callee(self, f, span) -> None:
        """Before a call through a function value (a thin pointer or a closure): not null."""
        self.check_null(f, span, what="call")

    def check_divisor(self, divisor, op: str, span) -> None:
        if not self.checking or (isinstance(divisor, Const) and divisor.value != 0):
            return
        self.b.check("check.nonzero", [divisor], self.check_site(span), span=span,
                     what="div" if op == "/" else "rem")


_SHOWN: dict[str, str] = {}


def _shown_path(path: str) -> str:
    """The file as a failure message names it: as the command line spelled it, and an
    absolute path (an imported module, the standard library) relative to the current
    directory when it lies below it, so a build's output does not depend on where the
    checkout (or a build sandbox) is."""
    shown = _SHOWN.get(path)
    if shown is None:
        shown = path
        if os.path.isabs(path):
            try:
                rel = os.path.relpath(path)
            except ValueError:          # another drive (Windows)
                rel = path
            if not rel.startswith(".."):
                shown = rel
        _SHOWN[path] = shown
    return shown
