"""Selection of memory operations: load/store, address arithmetic, locals, memcpy.

Scalar loads extend by the loaded type into the canonical slot form (frame.py); floats are
moved as raw bits through a GPR. Aggregate loads/stores/local copies move bytes between the
pointed-to memory and the value's slot. `alloca` emits nothing: its area is reserved and
zeroed by the prologue and its value is `lea` of that area wherever it is used.
"""
from __future__ import annotations

from ...ir.module import Undef
from ...ir.types import IntType, StructType, Type
from .operands import Imm, Mem
from .regs import RAX, RBP, RCX, RDI, RSI, resize


def load_scalar(asm, t: Type, reg, mem: Mem) -> None:
    """Load a scalar of type `t` from `mem` into 64-bit `reg`, canonically extended."""
    size = t.size
    signed = isinstance(t, IntType) and t.signed
    if size == 8:
        asm.emit("mov", reg, mem)
    elif size == 4:
        if signed:
            asm.emit("movsxd", reg, mem.sized(32))
        else:
            asm.emit("mov", resize(reg, 32), mem)
    else:
        asm.emit("movsx" if signed else "movzx", reg if signed else resize(reg, 32),
                 mem.sized(size * 8))


def store_scalar(asm, size: int, mem: Mem, reg) -> None:
    asm.emit("mov", mem, resize(reg, size * 8))


class MemMixin:
    def op_load(self, ins) -> None:
        p = ins.operands[0]
        if ins.type.is_aggregate:
            self.load_bits(p, RSI)
            self.copy(RBP, self.frame.offset(ins), RSI, 0, ins.type.size)
            return
        self.load_bits(p, RCX)
        load_scalar(self.asm, ins.type, RAX, Mem(RCX))
        self.asm.emit("mov", self.loc(ins), RAX)

    def op_store(self, ins) -> None:
        p, v = ins.operands
        if v.type.is_aggregate:
            self.load_bits(p, RDI)
            if isinstance(v, Undef):
                self.zero(RDI, 0, v.type.size)
            else:
                self.copy(RDI, 0, RBP, self.frame.offset(v), v.type.size)
            return
        self.load_bits(p, RCX)
        self.load_bits(v, RAX)
        store_scalar(self.asm, v.type.size, Mem(RCX), RAX)

    def op_ptradd(self, ins) -> None:
        p, idx = ins.operands
        size = max(p.type.pointee.size, 1)  # pointer-to-void steps bytes, as in GNU C
        self.load_bits(p, RAX)
        self.load_bits(idx, RCX)
        if size != 1:
            self.asm.emit("imul", RCX, RCX, Imm(size))
        self.asm.emit("add", RAX, RCX)
        self.store_bits(ins, RAX, raw=True)

    def op_byteadd(self, ins) -> None:
        p, off = ins.operands
        self.load_bits(p, RAX)
        self.load_bits(off, RCX)
        self.asm.emit("add", RAX, RCX)
        self.store_bits(ins, RAX, raw=True)

    def op_fieldptr(self, ins) -> None:
        p = ins.operands[0]
        st = p.type.pointee
        assert isinstance(st, StructType)
        self.load_bits(p, RAX)
        off = st.offsets[ins.attrs["index"]]
        if off:
            self.asm.emit("add", RAX, Imm(off))
        self.store_bits(ins, RAX, raw=True)

    def op_alloca(self, ins) -> None:
        pass

    def op_local_get(self, ins) -> None:
        loc = ins.operands[0]
        if loc.type.is_aggregate:
            self.copy(RBP, self.frame.offset(ins), RBP, self.frame.offset(loc), loc.type.size)
            return
        self.asm.emit("mov", RAX, self.loc(loc))
        self.asm.emit("mov", self.loc(ins), RAX)

    def op_local_set(self, ins) -> None:
        loc, v = ins.operands
        if loc.type.is_aggregate:
            if isinstance(v, Undef):
                self.zero(RBP, self.frame.offset(loc), loc.type.size)
            else:
                self.copy(RBP, self.frame.offset(loc), RBP, self.frame.offset(v),
                          loc.type.size)
            return
        self.load_bits(v, RAX)
        self.asm.emit("mov", self.loc(loc), RAX)

    def op_memcpy(self, ins) -> None:
        dst, src = ins.operands
        self.load_bits(dst, RDI)
        self.load_bits(src, RSI)
        self.copy(RDI, 0, RSI, 0, ins.attrs["size"])
