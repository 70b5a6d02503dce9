"""Optimisation remarks behind `--explain`: one collector per Module, fed by passes and backends.

    module.remarks.add(fn, ins.span, "licm", "hoisted mul out of the loop at line 7")

A remark names its function, a source line (from a span, or an int; 0 when unknown), the
pass (or backend stage) that decided, and the reason in plain words. `format()` is the
stable report: `fn: line N: pass: text`, sorted by function, then line, then insertion
order, so the same compile always explains itself the same way. `add` only records its
arguments; the `Remark` records are made when `items` is first read (compile time: most
compiles never read them).
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
        self._made: list[Remark] = []
        self._pending: list[tuple] = []      # add()'s arguments, not yet made into Remarks

    def add(self, function, span_or_line, pass_name: str, text: str) -> None:
        """`function` is a Function (or its name); `span_or_line` a diagnostics Span (an
        immutable tuple), an int line, or None."""
        name = function if function.__class__ is str else getattr(function, "name", "?")
        self._pending.append((name, span_or_line, pass_name, text))

    @property
    def items(self) -> list[Remark]:
        if self._pending:
            self._made += [Remark(n, _line(w), p, t) for n, w, p, t in self._pending]
            self._pending = []
        return self._made

    def __len__(self) -> int:
        return len(self._made) + len(self._pending)

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
