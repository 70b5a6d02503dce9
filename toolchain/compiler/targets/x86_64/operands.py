"""Instruction operands other than registers: immediates, memory references, symbol targets.

Invariants:
- `Mem` is either [base + index*scale + disp] (base/index optional GPR64s, index never rsp)
  or RIP-relative to a symbol (`sym` set, base/index None); `got=True` means "the GOT slot
  of `sym`" (R_X86_64_GOTPCREL family) instead of `sym` itself.
- `Mem.size` (bits) is only needed when no register operand fixes the operand size
  (e.g. `add dword [rax], 1`); None means "take it from the instruction row".
- `Sym` is a branch/call target or a RIP-relative name; `addend` is added to its address.
"""
from __future__ import annotations

from dataclasses import dataclass

from .regs import GPR, Reg


@dataclass(frozen=True)
class Imm:
    value: int


@dataclass(frozen=True)
class Sym:
    """A named code/data address: a label in this assembler or an external symbol."""
    name: str
    addend: int = 0


@dataclass(frozen=True)
class Mem:
    base: Reg | None = None
    index: Reg | None = None
    scale: int = 1
    disp: int = 0
    size: int | None = None
    sym: str | None = None
    got: bool = False

    def __post_init__(self) -> None:
        for r in (self.base, self.index):
            if r is not None and (r.kind != GPR or r.size != 64):
                raise ValueError(f"memory address register must be a 64-bit GPR, got {r}")
        if self.index is not None and self.index.num == 4:
            raise ValueError("rsp cannot be an index register")
        if self.scale not in (1, 2, 4, 8):
            raise ValueError(f"scale must be 1, 2, 4 or 8, got {self.scale}")
        if self.sym is not None and (self.base or self.index):
            raise ValueError("a RIP-relative operand has no base or index")
        if not -(1 << 31) <= self.disp < (1 << 31):
            raise ValueError(f"displacement {self.disp} does not fit in 32 bits")

    @property
    def rip(self) -> bool:
        return self.sym is not None

    def sized(self, size: int) -> "Mem":
        return Mem(self.base, self.index, self.scale, self.disp, size, self.sym, self.got)


def rip(sym: str, addend: int = 0, size: int | None = None, got: bool = False) -> Mem:
    """[rip + sym + addend] (or the GOT slot of sym when got=True)."""
    return Mem(disp=addend, size=size, sym=sym, got=got)


Operand = Reg | Imm | Mem | Sym
