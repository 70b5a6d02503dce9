"""AArch64 registers: general-purpose (x/w views), sp, the zero register, FP/SIMD (s/d views).

Invariants: `Reg.num` is the 5-bit field value; number 31 is sp or xzr/wzr depending on the
instruction, so the two are distinct `Reg` objects (kinds "sp" and "zr") and the encoder
checks that each operand position accepts the kind it is given. Registers are interned.
"""
from __future__ import annotations

from dataclasses import dataclass

GPR, SP_KIND, ZR, FPR = "gpr", "sp", "zr", "fpr"


@dataclass(frozen=True)
class Reg:
    name: str
    num: int
    size: int  # 64/32 for x/w (and sp/zr views), 64/32 for d/s
    kind: str = GPR

    @property
    def is_int(self) -> bool:
        return self.kind in (GPR, SP_KIND, ZR)

    def __repr__(self) -> str:
        return self.name


X = [Reg(f"x{i}", i, 64) for i in range(31)]
W = [Reg(f"w{i}", i, 32) for i in range(31)]
D = [Reg(f"d{i}", i, 64, FPR) for i in range(32)]
S = [Reg(f"s{i}", i, 32, FPR) for i in range(32)]
SP = Reg("sp", 31, 64, SP_KIND)
WSP = Reg("wsp", 31, 32, SP_KIND)
XZR = Reg("xzr", 31, 64, ZR)
WZR = Reg("wzr", 31, 32, ZR)
FP, LR = X[29], X[30]
IP0, IP1 = X[16], X[17]   # intra-procedure scratch: address and constant materialisation


def w(reg: Reg) -> Reg:
    """The 32-bit view of an integer register."""
    if reg.kind == ZR:
        return WZR
    return W[reg.num] if reg.kind == GPR else WSP


def x(reg: Reg) -> Reg:
    if reg.kind == ZR:
        return XZR
    return X[reg.num] if reg.kind == GPR else SP


def fp(num: int, size: int) -> Reg:
    """The FP register `num` viewed at 32 (s) or 64 (d) bits."""
    return (S if size == 32 else D)[num]


# AAPCS64 argument registers
INT_ARGS = X[:8]
FLOAT_ARGS = list(range(8))   # v0..v7, viewed as s/d by the value's size
INDIRECT_RESULT = X[8]
