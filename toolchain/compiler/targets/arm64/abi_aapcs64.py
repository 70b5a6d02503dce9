"""AAPCS64 (Linux flavour) calling convention: place a signature's values.

Rules used (AAPCS64 §6.8.2, restricted to what Mettle types can express):
- integers, bools, pointers: the next of x0..x7, else an 8-byte stack slot;
- float32/float64: the next of v0..v7 (as s/d), else an 8-byte stack slot;
- a homogeneous floating-point aggregate (HFA: 1..4 members, all float32 or all float64)
  takes one v register per member when enough are left, else goes on the stack and no more
  v registers are used (NSRN = 8);
- other aggregates of at most 16 bytes take one or two x registers when enough are left,
  else the stack (and NGRN = 8); larger ones are copied by the caller and passed by
  reference (a pointer in an x register or stack slot);
- results: scalars in x0/v0, HFAs in v0..v3, other aggregates <= 16 bytes in x0/x1, larger
  ones through the caller's buffer whose address is passed in x8.
Variadic callees use the same rules on Linux (unlike Apple's ABI), so printf-style externs
declared with fixed parameter types are called correctly. Stack arguments occupy 8-byte
aligned slots in order ([sp + offset] at the call; the callee sees them at [x29 + 16 + off]).
The caller's and the callee's code use this one function, so both sides agree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.types import Type, align_up
from ..common.host import flatten
from .regs import INT_ARGS, X, Reg, fp

INTEGER, FLOAT = "INTEGER", "FLOAT"


@dataclass(frozen=True)
class Piece:
    cls: str        # INTEGER or FLOAT
    reg: Reg        # x register, or the s/d view of a v register
    offset: int     # byte offset inside the value
    size: int       # bytes moved (8 for x registers, the member size for FP)


@dataclass
class ArgLoc:
    pieces: list[Piece] = field(default_factory=list)
    stack: int | None = None
    size: int = 8
    byref: bool = False   # a copy's address is passed (the pieces/stack hold a pointer)


@dataclass
class Layout:
    args: list[ArgLoc]
    ret: str                 # "void" | "regs" | "memory"
    ret_pieces: list[Piece]
    stack_bytes: int         # outgoing stack argument area, 16-byte aligned


def hfa(t: Type) -> list[tuple[int, Type]] | None:
    """The members of a homogeneous floating-point aggregate, or None."""
    if not t.is_aggregate:
        return None
    members = flatten(t)
    if not 1 <= len(members) <= 4 or not all(m.is_float for _, m in members):
        return None
    if len({m.size for _, m in members}) != 1:
        return None
    return members


def _int_pieces(t: Type, regs: list[Reg]) -> list[Piece]:
    n = (max(t.size, 1) + 7) // 8
    return [Piece(INTEGER, regs.pop(0), 8 * k, 8) for k in range(n)]


def _place(t: Type, ints: list[Reg], fps: list[int]) -> tuple[list[Piece] | None, bool]:
    """(pieces, byref) when `t` fits in the registers left, else (None, byref)."""
    if not t.is_aggregate:
        if t.is_float:
            return ([Piece(FLOAT, fp(fps.pop(0), t.size * 8), 0, t.size)] if fps else None,
                    False)
        return ([Piece(INTEGER, ints.pop(0), 0, 8)] if ints else None), False
    members = hfa(t)
    if members is not None:
        if len(members) > len(fps):
            fps.clear()
            return None, False
        return [Piece(FLOAT, fp(fps.pop(0), m.size * 8), off, m.size)
                for off, m in members], False
    if t.size > 16:
        return ([Piece(INTEGER, ints.pop(0), 0, 8)] if ints else None), True
    need = (max(t.size, 1) + 7) // 8
    if need > len(ints):
        ints.clear()
        return None, False
    return _int_pieces(t, ints), False


def layout(params: list[Type], ret: Type) -> Layout:
    ints, fps = list(INT_ARGS), list(range(8))
    args, stack = [], 0
    for t in params:
        pieces, byref = _place(t, ints, fps)
        size = 8 if byref else max(t.size, 1)
        if pieces is not None:
            args.append(ArgLoc(pieces, None, size, byref))
            continue
        args.append(ArgLoc([], stack, size, byref))
        stack += align_up(size, 8)
    if ret.size == 0 and not ret.is_aggregate:
        return Layout(args, "void", [], align_up(stack, 16))
    pieces, byref = _place(ret, list(X[:2]), list(range(4)))
    if byref or pieces is None:
        return Layout(args, "memory", [], align_up(stack, 16))
    return Layout(args, "regs", pieces, align_up(stack, 16))
