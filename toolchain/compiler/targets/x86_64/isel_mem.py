"""Selection of memory operations: load/store, address arithmetic, locals, memcpy.

Scalar loads extend by the loaded type into the canonical slot form (frame.py); floats are
moved as raw bits through a GPR, or straight into/out of their xmm register under -O. Aggregate loads/stores/local copies move bytes between the
pointed-to memory and the value's slot. `alloca` emits nothing: its area is reserved and
zeroed by the prologue and its value is `lea` of that area wherever it is used.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Undef
from ...ir.types import IntType, StructType, Type
from ..common.frame import is_alloca
from .isel_values import imm32
from .operands import Imm, Mem
from .regs import RAX, RBP, RCX, RDI, RDX, RSI, resize


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


def folds_into_access(ins, nxt, uses: int) -> bool:
    """A `ptradd` used only as the address of the scalar load/store right after it becomes
    that access's [base + index*scale] operand (its operands are still in place there: no
    instruction runs in between)."""
    if ins.op != "ptradd" or nxt is None or nxt.op not in ("load", "store") or uses != 1 \
            or nxt.operands[0] is not ins:
        return False
    if nxt.op == "load":
        return not nxt.type.is_aggregate
    return nxt.op == "store" and not nxt.operands[1].type.is_aggregate and \
        nxt.operands[1] is not ins


def _no_vectors(ins):
    """Vector values (`vec<N x T>`) come only from the GPU load combiner; host selection
    has no lowering for them (an IR built by hand that uses one gets this diagnostic)."""
    return error("E0009", f"{ins.op} of a vector type is not supported on host targets "
                 "(vec<N x T> values are GPU-only)", ins.span)


_SSE_FOLDS = ("add", "sub", "mul", "div", "min", "max")


def folds_into_float_op(ins, nxt, uses: int) -> bool:
    """A float load used only by the float add/sub/mul/div/min/max right after it becomes
    that operation's memory operand (operand b; a only of add/mul, which commute)."""
    if ins.op != "load" or nxt is None or uses != 1 or not ins.type.is_float or \
            nxt.op not in _SSE_FOLDS or not nxt.type.is_float or len(nxt.operands) != 2:
        return False
    a, b = nxt.operands
    return (b is ins and a is not ins) or (a is ins and b is not ins and
                                           nxt.op in ("add", "mul"))


class MemMixin:
    def op_vec_extract(self, ins) -> None:
        raise _no_vectors(ins)

    op_vec_insert = op_vec_extract

    def address(self, p) -> Mem:
        """The memory operand for pointer `p`: a folded ptradd as [base + index*scale + disp]
        (base in its register or rcx, index in its register or rdx), an alloca as its frame
        area, else [p] with p in its register or rcx."""
        if is_alloca(p):
            return self.slot(p)
        if id(p) in self.folded:
            return self.scaled(p, RCX, RDX)
        base = self.gpr(p)
        if base is None:
            self.load_bits(p, RCX)
            base = RCX
        return Mem(base)

    def op_load(self, ins) -> None:
        p = ins.operands[0]
        if ins.type.is_vector:
            raise _no_vectors(ins)
        if ins.type.is_aggregate:
            self.load_bits(p, RSI)
            self.copy(RBP, self.frame.offset(ins), RSI, 0, ins.type.size)
            return
        if id(ins) in self.folded:
            return      # the next float operation reads the memory itself (isel_arith)
        mem = self.address(p)
        x = self.xmm(ins)
        if x is not None:
            self.asm.emit("movss" if ins.type.size == 4 else "movsd", x, mem)
            return
        dst = self.gpr(ins) or RAX
        load_scalar(self.asm, ins.type, dst, mem)
        if dst is RAX:
            self.put_bits(ins, RAX)

    def op_store(self, ins) -> None:
        p, v = ins.operands
        if v.type.is_vector:
            raise _no_vectors(ins)
        if v.type.is_aggregate:
            self.load_bits(p, RDI)
            if isinstance(v, Undef):
                self.zero(RDI, 0, v.type.size)
            else:
                self.copy(RDI, 0, RBP, self.frame.offset(v), v.type.size)
            return
        mem = self.address(p)
        size = v.type.size
        x = self.xmm(v)
        if x is not None:
            self.asm.emit("movss" if size == 4 else "movsd", mem, x)
            return
        imm = imm32(v)
        if imm is not None and (size == 8 or -(1 << 31) <= imm.value < (1 << 31)):
            bits = imm.value & ((1 << (8 * size)) - 1) if size < 8 else imm.value
            self.asm.emit("mov", mem.sized(8 * size), Imm(bits))
            return
        reg = self.gpr(v)
        if reg is None:
            self.load_bits(v, RAX)
            reg = RAX
        store_scalar(self.asm, size, mem, reg)

    def op_ptradd(self, ins) -> None:
        if id(ins) in self.folded:
            return      # the next load/store addresses through it (address above)
        dst = self.gpr(ins) or RAX
        self.asm.emit("lea", dst, self.scaled(ins, RAX, RCX))
        self.put_bits(ins, dst)

    def scaled(self, ptradd, base_scratch, index_scratch) -> Mem:
        """[base + index*size] (or [base + disp] for a constant index) of a ptradd, with the
        base and index in their registers or loaded into the scratch registers; an element
        size that is no x86 scale is multiplied into the index scratch."""
        p, idx = ptradd.operands
        size = max(p.type.pointee.size, 1)  # pointer-to-void steps bytes, as in GNU C
        base = self.gpr(p)
        if base is None:
            self.load_bits(p, base_scratch)
            base = base_scratch
        imm = imm32(idx)
        if imm is not None and -(1 << 31) <= imm.value * size < (1 << 31):
            return Mem(base, disp=imm.value * size)
        index = self.gpr(idx)
        if index is None or size not in (1, 2, 4, 8):
            self.load_bits(idx, index_scratch)
            index = index_scratch
            if size not in (1, 2, 4, 8):
                self.asm.emit("imul", index_scratch, index_scratch, Imm(size))
                size = 1
        return Mem(base, index, size)

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
        self.copy_value(ins, loc)

    def op_local_set(self, ins) -> None:
        loc, v = ins.operands
        if loc.type.is_aggregate:
            if isinstance(v, Undef):
                self.zero(RBP, self.frame.offset(loc), loc.type.size)
            else:
                self.copy(RBP, self.frame.offset(loc), RBP, self.frame.offset(v),
                          loc.type.size)
            return
        self.copy_value(loc, v)

    def op_memcpy(self, ins) -> None:
        dst, src = ins.operands
        self.load_bits(dst, RDI)
        self.load_bits(src, RSI)
        self.copy(RDI, 0, RSI, 0, ins.attrs["size"])
