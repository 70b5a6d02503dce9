"""The Microsoft x64 calling convention (Windows): place a signature's values.

Rules (Microsoft "x64 calling convention", restricted to what Mettle types can express):
- the first four arguments go by position in rcx, rdx, r8, r9 or, for floats, xmm0..xmm3;
  a float also has its bits in the GPR of its position (SHADOW), which variadic callees such
  as printf read, and non-variadic ones ignore;
- aggregates of 1, 2, 4 or 8 bytes are passed like an integer of that size; any other
  aggregate is copied by the caller and passed by reference (its address takes the slot);
- later arguments go on the stack at [rsp + 32 + 8 * (position - 4)]: the caller always
  reserves 32 bytes of shadow space below them, even for fewer than four arguments;
- results: integers and 1/2/4/8-byte aggregates in rax, floats in xmm0; other aggregates
  through a caller buffer whose address is the hidden first argument (rcx) and comes back
  in rax.
Callee-saved: rbx, rbp, rdi, rsi, r12-r15, xmm6-xmm15; the selector uses rsi/rdi as scratch,
so it saves them (CALLEE_SAVED_SCRATCH). Frames of a page or more are probed page by page
(STACK_PROBE), since Windows grows the stack through a guard page.
The module has abi_sysv's interface (layout, Layout/ArgLoc/RetLoc, register roles).
"""
from __future__ import annotations

from ...ir.types import Type, align_up
from .abi_sysv import INTEGER, SHADOW, SSE, ArgLoc, Layout, RetLoc
from .regs import R8, R9, RAX, RCX, RDI, RDX, RSI, XMM0, XMMS

NAME = "win64"
INT_ARGS = (RCX, RDX, R8, R9)
FLOAT_ARGS = tuple(XMMS[:4])
SRET_REG = RCX
C_ARGS = (RCX, RDX, R8)
SHADOW_SPACE = 32
CALLEE_SAVED_SCRATCH = (RSI, RDI)
STACK_PROBE = True
_BY_VALUE_SIZES = (1, 2, 4, 8)


def _ret_loc(ret: Type) -> RetLoc:
    if ret.size == 0 and not ret.is_aggregate:
        return RetLoc("void")
    if ret.is_aggregate:
        if ret.size in _BY_VALUE_SIZES:
            return RetLoc("regs", [(INTEGER, RAX)])
        return RetLoc("memory")
    return RetLoc("regs", [(SSE, XMM0)] if ret.is_float else [(INTEGER, RAX)])


def layout(params: list[Type], ret: Type) -> Layout:
    r = _ret_loc(ret)
    pos = 1 if r.kind == "memory" else 0
    args = []
    for t in params:
        byref = t.is_aggregate and t.size not in _BY_VALUE_SIZES
        size = 8 if byref else max(t.size, 1)
        if pos < 4:
            if t.is_float:
                regs = [(SSE, FLOAT_ARGS[pos]), (SHADOW, INT_ARGS[pos])]
            else:
                regs = [(INTEGER, INT_ARGS[pos])]
            args.append(ArgLoc(regs, None, size, byref))
        else:
            args.append(ArgLoc([], SHADOW_SPACE + 8 * (pos - 4), size, byref))
        pos += 1
    stack = SHADOW_SPACE + 8 * max(0, pos - 4)
    return Layout(args, r, align_up(stack, 16), 0)
