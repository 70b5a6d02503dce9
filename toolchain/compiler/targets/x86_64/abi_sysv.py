"""SysV AMD64 calling convention: classify IR types and place a signature's values.

Classification (psABI §3.2.3, restricted to what Mettle types can express):
- scalars: int/bool/pointer/fn-pointer are INTEGER, float32/float64 are SSE;
- aggregates (struct/array/string) larger than 16 bytes, or that do not fit in the registers
  left, are MEMORY (passed by copy on the stack; returned through a hidden pointer in rdi);
- otherwise each eightbyte is SSE when every scalar in it is a float, else INTEGER.
Mettle types are naturally aligned (alignment <= 8), so no field straddles an eightbyte.

`layout(params, ret)` gives one `ArgLoc` per parameter and a `RetLoc`. The same layout is used
by the caller (isel_call.py) and the callee's prologue (isel.py), so both always agree.
Stack arguments are 8-byte aligned slots at [rsp + offset] at the call (the callee sees them
at [rbp + 16 + offset]).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.types import Type, align_up
from ..common.host import flatten
from .regs import FLOAT_ARGS, INT_ARGS, RAX, RDX, RSI, RDI, XMM0, XMM1, Reg

INTEGER, SSE, MEMORY = "INTEGER", "SSE", "MEMORY"
SHADOW = "SHADOW"   # Win64 only: a float's bits also in the GPR of its position (varargs)

# Register roles the selector asks its ABI module for (abi_win64.py has the same names):
NAME = "sysv"
SRET_REG = RDI                  # hidden result pointer on entry
C_ARGS = (RDI, RSI, RDX)        # memcpy/memset/kernel-handle argument registers
SHADOW_SPACE = 0                # bytes the caller reserves below stack arguments
CALLEE_SAVED_SCRATCH: tuple = ()  # scratch registers the ABI says a callee must preserve
STACK_PROBE = False             # touch each page of a big frame in order (Windows guard page)


def classify(t: Type) -> list[str] | str:
    """A list of eightbyte classes, or MEMORY."""
    if not t.is_aggregate:
        return [SSE if t.is_float else INTEGER]
    if t.size > 16 or t.size == 0:
        return MEMORY
    classes: list[str | None] = [None] * ((t.size + 7) // 8)
    for off, st in flatten(t):
        k = off // 8
        cls = SSE if st.is_float else INTEGER
        classes[k] = INTEGER if INTEGER in (classes[k], cls) else SSE
    return [c or SSE for c in classes]  # a padding-only eightbyte carries nothing


@dataclass
class ArgLoc:
    """regs: [(class, register)] per eightbyte; or on the stack at `stack` (bytes)."""
    regs: list[tuple[str, Reg]] = field(default_factory=list)
    stack: int | None = None
    size: int = 8
    byref: bool = False   # the caller passes a copy's address (Win64 aggregates)


@dataclass
class RetLoc:
    kind: str                       # "void" | "regs" | "memory"
    regs: list[tuple[str, Reg]] = field(default_factory=list)


@dataclass
class Layout:
    args: list[ArgLoc]
    ret: RetLoc
    stack_bytes: int                # outgoing stack argument area, 16-byte aligned
    sse_count: int                  # vector registers used (the value of al for varargs)


def _ret_loc(ret: Type) -> RetLoc:
    if ret.size == 0 and not ret.is_aggregate:
        return RetLoc("void")
    cls = classify(ret)
    if cls == MEMORY:
        return RetLoc("memory")
    ints, sses = [RAX, RDX], [XMM0, XMM1]
    return RetLoc("regs", [(c, ints.pop(0) if c == INTEGER else sses.pop(0)) for c in cls])


def layout(params: list[Type], ret: Type) -> Layout:
    r = _ret_loc(ret)
    ints = list(INT_ARGS[1:] if r.kind == "memory" else INT_ARGS)
    sses = list(FLOAT_ARGS)
    args, stack = [], 0
    for t in params:
        cls = classify(t)
        size = max(t.size, 1)
        if cls != MEMORY:
            need_i, need_s = cls.count(INTEGER), cls.count(SSE)
            if need_i <= len(ints) and need_s <= len(sses):
                args.append(ArgLoc([(c, ints.pop(0) if c == INTEGER else sses.pop(0))
                                    for c in cls], size=size))
                continue
        args.append(ArgLoc(stack=stack, size=size))
        stack += align_up(size, 8)
    return Layout(args, r, align_up(stack, 16), len(FLOAT_ARGS) - len(sses))
