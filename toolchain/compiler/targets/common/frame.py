"""Stack frame layout for one function: a slot for every IR value, local and alloca.

The selector keeps no value in a register across IR instructions: every parameter, `Local`,
non-void instruction result and `alloca` area owns a slot at a fixed negative offset from
rbp. Invariants:
- a scalar slot is 8 bytes and holds the value canonically: integers sign- or zero-extended
  to 64 bits by their own signedness, bool as 0/1, floats as their IEEE bits in the low bytes;
- an aggregate slot is the aggregate's bytes, rounded up to 8 (so eightbyte moves of a
  register-passed struct never touch a neighbour);
- below the slots lies the outgoing argument area at [rsp + 0 ...]; the frame size is a
  multiple of 16 so rsp is 16-byte aligned at every call (push rbp realigned it on entry).
"""
from __future__ import annotations

from ...ir.module import Function, Instr
from ...ir.types import Type, align_up


class Frame:
    def __init__(self) -> None:
        self.used = 0                            # bytes below rbp handed out so far
        self.slots: dict[int, int] = {}          # id(value/Local) -> rbp offset (negative)
        self.zeroed: list[tuple[int, int]] = []  # (rbp offset, size) cleared in the prologue
        self.outgoing = 0                        # largest outgoing stack-argument area
        self.scratch: dict[int, tuple] = {}      # id(instr) -> selector-defined areas
        self.sret = 0                            # slot saving the hidden sret pointer

    def alloc(self, size: int, align: int = 8) -> int:
        """A fresh area of `size` bytes; returns its rbp-relative (negative) offset."""
        self.used = align_up(self.used + align_up(max(size, 1), 8), max(align, 8))
        return -self.used

    def slot_for(self, key: object, t: Type) -> int:
        off = self.alloc(t.size if t.is_aggregate else 8, t.align)
        self.slots[id(key)] = off
        return off

    def offset(self, key: object) -> int:
        return self.slots[id(key)]

    def has(self, key: object) -> bool:
        return id(key) in self.slots

    def need_outgoing(self, size: int) -> None:
        self.outgoing = max(self.outgoing, size)

    @property
    def size(self) -> int:
        return align_up(self.used + self.outgoing, 16)


def plan(fn: Function, extra) -> Frame:
    """Lay out `fn`: params, locals, then instruction results in program order.

    `extra(frame, instr)` lets the selector reserve per-instruction scratch (launch cells,
    outgoing argument bytes) during the same walk.
    """
    frame = Frame()
    for p in fn.params:
        frame.slot_for(p, p.type)
    for loc in fn.locals:
        off = frame.slot_for(loc, loc.type)
        if loc.type.is_aggregate:
            frame.zeroed.append((off, loc.type.size))
    for ins in fn.instructions():
        if ins.op == "alloca":
            t = ins.attrs["type"]
            off = frame.alloc(t.size, t.align)
            frame.slots[id(ins)] = off
            frame.zeroed.append((off, t.size))
        elif ins.type.size or ins.type.is_aggregate:
            frame.slot_for(ins, ins.type)
        extra(frame, ins)
    return frame


def is_alloca(v: object) -> bool:
    return isinstance(v, Instr) and v.op == "alloca"
