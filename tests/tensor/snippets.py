"""A stand-in for the PTX function emitter that collects the straight-line snippet a
backend helper emits (its calls: `new` register names, `emit` instruction text and `put`
instruction objects built by targets/ptx/ops.py), so unit tests can wrap it in a tiny
kernel and run it on the interpreter (ptx_sim.py)."""
from __future__ import annotations

from toolchain.compiler.targets.ptx.printer import format_instr


class SnippetEmitter:
    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def new(self, kind: str) -> str:
        self.count += 1
        return f"%t{kind}{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append(text + ";")

    def put(self, *instrs) -> None:
        self.lines.extend(format_instr(i).lstrip("\t") for i in instrs)
