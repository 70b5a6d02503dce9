"""AArch64 instruction operands other than registers.

- `Imm`: an immediate; `Mem`: [base, #offset] (mode "off"), pre-index `[base, #o]!` ("pre"),
  post-index `[base], #o` ("post") or register offset `[base, index]` (index set);
- `Sym`: a branch/call target (label or external symbol);
- `Page`/`Lo12`: the adrp page of a symbol and the low 12 bits of its address (or, with
  got=True, of its GOT slot) for the add/ldr that follows adrp.
"""
from __future__ import annotations

from dataclasses import dataclass

from .regs import Reg


@dataclass(frozen=True)
class Imm:
    value: int


@dataclass(frozen=True)
class Sym:
    name: str
    addend: int = 0


@dataclass(frozen=True)
class Page:
    sym: str
    addend: int = 0
    got: bool = False


@dataclass(frozen=True)
class Lo12:
    sym: str
    addend: int = 0
    got: bool = False


@dataclass(frozen=True)
class Mem:
    base: Reg
    offset: int = 0
    mode: str = "off"          # "off" | "pre" | "post"
    index: Reg | None = None   # register offset (64-bit, no shift)
    lo12: Lo12 | None = None   # [base, :lo12:sym] (offset must be 0)


Operand = Reg | Imm | Mem | Sym | Page | Lo12 | str
