"""AArch64 selection of memory operations: load/store, address arithmetic, locals, memcpy.
Same slot discipline as the x86-64 selector (see isel_values.py); `alloca` emits nothing:
its area is zeroed by the prologue and its value is x29 + offset wherever it is used."""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Undef
from ...ir.types import IntType, StructType
from .isel_arith import A, B, C
from .regs import FP, X


def _no_vectors(ins):
    """Vector values (`vec<N x T>`) come only from the GPU load combiner; host selection
    has no lowering for them (an IR built by hand that uses one gets this diagnostic)."""
    return error("E0009", f"{ins.op} of a vector type is not supported on host targets "
                 "(vec<N x T> values are GPU-only)", ins.span)


class MemMixin:
    def op_vec_extract(self, ins) -> None:
        raise _no_vectors(ins)

    op_vec_insert = op_vec_extract

    def copy_value(self, dst_ins, v) -> None:
        self.copy(FP, self.off(dst_ins), FP, self.off(v), v.type.size)

    def op_load(self, ins) -> None:
        p = ins.operands[0]
        if ins.type.is_vector:
            raise _no_vectors(ins)
        if ins.type.is_aggregate:
            self.load_bits(p, B)
            self.copy(FP, self.off(ins), B, 0, ins.type.size)
            return
        t = ins.type
        base, dst = self.gp(p, B), self.home(ins, A)
        self.load_mem(dst, base, 0, t.size, isinstance(t, IntType) and t.signed)
        self.put(ins, dst)

    def op_store(self, ins) -> None:
        p, v = ins.operands
        if v.type.is_vector:
            raise _no_vectors(ins)
        if v.type.is_aggregate:
            self.load_bits(p, X[12])
            if isinstance(v, Undef):
                self.zero(X[12], 0, v.type.size)
            else:
                self.copy(X[12], 0, FP, self.off(v), v.type.size)
            return
        base = self.gp(p, B)
        self.store_mem(self.gp(v, A), base, 0, v.type.size)

    def op_ptradd(self, ins) -> None:
        p, idx = ins.operands
        size = max(p.type.pointee.size, 1)  # pointer-to-void steps bytes, as in GNU C
        na, nb = self.gp(p, A), self.gp(idx, B)
        if size != 1:
            self.mov_imm(C, size)
            self.asm.emit("mul", B, nb, C)
            nb = B
        dst = self.home(ins, A)
        self.asm.emit("add", dst, na, nb)
        self.put(ins, dst)

    def op_byteadd(self, ins) -> None:
        p, off = ins.operands
        self.load_bits(p, A)
        self.load_bits(off, B)
        self.asm.emit("add", A, A, B)
        self.store_bits(ins, A, raw=True)

    def op_fieldptr(self, ins) -> None:
        p = ins.operands[0]
        st = p.type.pointee
        assert isinstance(st, StructType)
        self.load_bits(p, A)
        self.add_offset(A, A, st.offsets[ins.attrs["index"]])
        self.store_bits(ins, A, raw=True)

    def op_alloca(self, ins) -> None:
        pass

    def op_local_get(self, ins) -> None:
        loc = ins.operands[0]
        if loc.type.is_aggregate:
            self.copy(FP, self.off(ins), FP, self.off(loc), loc.type.size)
            return
        self.put(ins, self.gp(loc, A))

    def op_local_set(self, ins) -> None:
        loc, v = ins.operands
        if loc.type.is_aggregate:
            if isinstance(v, Undef):
                self.zero(FP, self.off(loc), loc.type.size)
            else:
                self.copy(FP, self.off(loc), FP, self.off(v), loc.type.size)
            return
        self.put(loc, self.gp(v, A))

    def op_memcpy(self, ins) -> None:
        dst, src = ins.operands
        self.load_bits(dst, X[12])
        self.load_bits(src, X[13])
        self.copy(X[12], 0, X[13], 0, ins.attrs["size"])
