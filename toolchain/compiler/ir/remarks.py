"""Optimisation remarks behind `--explain`: one collector per Module, fed by passes and backends.

    module.remarks.add(fn, ins.span, "licm", "hoisted mul out of the loop at line 7")

A remark names its function, a source line (from a span, or an int; 0 when unknown), the
pass (or backend stage) that decided, and the reason in plain words. `format()` is the
stable report: `fn: line N: pass: text`, sorted by function, then line, then insertion
order, so the same compile always explains itself the same way.
"""
from __future__ import annotations

from ...records import dataclass


@dataclass(frozen=True)
class Remark:
    function: str
    line: int
    pass_name: str
    text: str


class Remarks:
    def __init__(self) -> None:
        self.items: list[Remark] = []

    def add(self, function, span_or_line, pass_name: str, text: str) -> None:
        """`function` is a Function (or its name); `span_or_line` a diagnostics Span, an
        int line, or None."""
        name = function if isinstance(function, str) else getattr(function, "name", "?")
        self.items.append(Remark(name, _line(span_or_line), pass_name, text))

    def __len__(self) -> int:
        return len(self.items)

    def for_function(self, name: str) -> list[Remark]:
        return [r for r in self.items if r.function == name]

    def format(self) -> str:
        order = sorted(enumerate(self.items), key=lambda p: (p[1].function, p[1].line, p[0]))
        return "".join(f"{r.function}: line {r.line}: {r.pass_name}: {r.text}\n"
                       for _, r in order)


def _line(where) -> int:
    if where is None:
        return 0
    if isinstance(where, int):
        return where
    line = getattr(where, "line", None)
    if line is None:
        start = getattr(where, "start", None)
        line = getattr(start, "line", None) if start is not None else None
    return int(line) if isinstance(line, int) else 0
