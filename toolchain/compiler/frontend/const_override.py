"""`--const NAME=VALUE` (docs/reference/tiles.md "Variants"): replace the initializer of a
top-level integer or format `const` of the entry module before type checking, so one source
builds several variants (head dimension, element format). E0355 when the const does not
exist or VALUE does not fit its kind (an integer literal, or f16 / bf16 / f32)."""
from __future__ import annotations

from . import ast as A
from ..diagnostics import DiagnosticBag, Span

FORMAT_WORDS = ("f16", "bf16", "f32")


def is_format_const(d) -> bool:
    """`const ELEM = f16;`: a top-level untyped const whose initializer is a format word."""
    return isinstance(d, A.VarDecl) and d.is_const and d.type is None and \
        isinstance(d.init, A.Name) and d.init.name in FORMAT_WORDS


def apply_consts(path: str, items: list, consts, bag: DiagnosticBag) -> None:
    for name, value in consts:
        flag = f"--const {name}={value}"
        decl = next((d for d in items if isinstance(d, A.VarDecl) and d.is_const
                     and d.name == name and d.init is not None
                     and d.span is not None and d.span.file == path), None)
        if decl is None:
            bag.error("E0355", f"`{flag}`: no top-level const named {name}", Span(path, 1, 1),
                      help="--const replaces the value of a top-level `const`")
            continue
        span = decl.init.span
        if is_format_const(decl):
            if value not in FORMAT_WORDS:
                bag.error("E0355", f"`{flag}`: {name} is a format constant (f16, bf16, f32)",
                          decl.span)
                continue
            decl.init = A.Name(value, span=span)
            continue
        try:
            number = int(value, 0)
        except ValueError:
            bag.error("E0355", f"`{flag}`: {name} is an integer constant", decl.span)
            continue
        if not isinstance(decl.init, A.IntLit) and not _integer_expr(decl.init):
            bag.error("E0355", f"`{flag}`: {name} is not an integer constant", decl.span)
            continue
        decl.init = A.IntLit(number, span=span)


def _integer_expr(e) -> bool:
    return isinstance(e, (A.IntLit, A.Binary, A.Unary, A.Name))
