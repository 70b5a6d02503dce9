"""x86-64 registers: general-purpose (8/16/32/64-bit views) and SSE xmm registers.

Invariants:
- `Reg.num` is the 4-bit hardware number (0..15); its bit 3 goes to REX.R/X/B, its low three
  bits to ModRM/SIB/opcode.
- The legacy high-byte registers (ah, ch, dh, bh) are not modelled: every 8-bit register with
  number 4..7 is spl/bpl/sil/dil and therefore forces a REX prefix (`needs_rex`).
- Registers are interned singletons; compare with `==` or `is`.
"""
from __future__ import annotations

from dataclasses import dataclass

GPR = "gpr"
XMM = "xmm"


@dataclass(frozen=True)
class Reg:
    name: str
    num: int
    size: int  # bits: 8/16/32/64 for GPRs, 128 for xmm
    kind: str = GPR

    @property
    def low3(self) -> int:
        return self.num & 7

    @property
    def ext(self) -> int:
        """The REX extension bit (1 for r8..r15 / xmm8..xmm15)."""
        return self.num >> 3

    @property
    def needs_rex(self) -> bool:
        """spl/bpl/sil/dil exist only with a REX prefix (without it they mean ah..bh)."""
        return self.kind == GPR and self.size == 8 and 4 <= self.num <= 7

    def __repr__(self) -> str:
        return self.name


_NAMES64 = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"]
_NAMES32 = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"]
_NAMES16 = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"]
_NAMES8 = ["al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"]


def _gpr_name(num: int, size: int) -> str:
    if num < 8:
        table = {64: _NAMES64, 32: _NAMES32, 16: _NAMES16, 8: _NAMES8}[size]
        return table[num]
    suffix = {64: "", 32: "d", 16: "w", 8: "b"}[size]
    return f"r{num}{suffix}"


GPRS: dict[int, list[Reg]] = {
    size: [Reg(_gpr_name(n, size), n, size) for n in range(16)] for size in (8, 16, 32, 64)
}
XMMS: list[Reg] = [Reg(f"xmm{n}", n, 128, XMM) for n in range(16)]
BY_NAME: dict[str, Reg] = {r.name: r for regs in GPRS.values() for r in regs}
BY_NAME.update({r.name: r for r in XMMS})


def gpr(num: int, size: int = 64) -> Reg:
    """The general-purpose register `num` viewed at `size` bits."""
    return GPRS[size][num]


def resize(reg: Reg, size: int) -> Reg:
    """The same GPR at another width (rax -> eax -> ax -> al)."""
    if reg.kind != GPR:
        raise ValueError(f"resize: {reg.name} is not a general-purpose register")
    return GPRS[size][reg.num]


# Module-level names for the selector and tests: RAX, EAX, AX, AL, R9, R9D, XMM0, ...
globals().update({r.name.upper(): r for r in BY_NAME.values()})

# SysV AMD64 ABI (used by abi_sysv.py and the startup code).
INT_ARGS = [BY_NAME[n] for n in ("rdi", "rsi", "rdx", "rcx", "r8", "r9")]
FLOAT_ARGS = XMMS[:8]
CALLEE_SAVED = [BY_NAME[n] for n in ("rbx", "rbp", "r12", "r13", "r14", "r15")]
