"""Moving IR values between their frame slots and registers (the selector's only state).

Every operand kind has one way in: constants become immediates, globals and functions their
address (imported ones through the GOT), allocas `lea` of their area, everything else a
load from its slot (frame.py states the canonical slot form). Scratch registers: rax, rcx,
rdx, rsi, rdi for values, r11 for constant bits and copies, r10 for indirect call targets;
rbx/r12-r15 are never touched, so nothing callee-saved needs saving.
"""
from __future__ import annotations


from ...diagnostics import error
from ...ir.module import Const, Function, Global, Instr, Local, Param, Undef
from ...ir.types import FloatType, IntType, Type
from .assembler import Assembler
from ..common.frame import Frame, is_alloca
from ..common.host import const_bits
from .operands import Imm, Mem, Sym, rip
from .regs import GPR, R11, RAX, RBP, XMM, XMM0, Reg, resize


def ice(msg: str):
    return error("E0900", f"internal compiler error (x86-64): {msg}")


def imm32(v) -> Imm | None:
    """A constant whose 64-bit register image is a sign-extended imm32, as an immediate."""
    if not isinstance(v, Const) or v.type.is_float:
        return None
    bits = const_bits(v) & (1 << 64) - 1
    signed = bits - (1 << 64) if bits >> 63 else bits
    return Imm(signed) if -(1 << 31) <= signed < (1 << 31) else None


def normalize(asm: Assembler, t: Type, reg: Reg) -> None:
    """Re-extend the low `t.size` bytes of 64-bit `reg` to the canonical slot form."""
    if t.is_bool or (isinstance(t, IntType) and not t.signed and t.bits == 8):
        asm.emit("movzx", resize(reg, 32), resize(reg, 8))
    elif isinstance(t, IntType) and t.bits < 64:
        if t.bits == 32:
            if t.signed:
                asm.emit("movsxd", reg, resize(reg, 32))
            else:
                asm.emit("mov", resize(reg, 32), resize(reg, 32))
        elif t.signed:
            asm.emit("movsx", reg, resize(reg, t.bits))
        else:
            asm.emit("movzx", resize(reg, 32), resize(reg, t.bits))
    elif isinstance(t, FloatType) and t.bits == 32:
        asm.emit("mov", resize(reg, 32), resize(reg, 32))


class ValueMixin:
    asm: Assembler
    frame: Frame
    module: object
    regs: dict = {}      # id(value) -> register, from regalloc.allocate (empty: all slots)
    # (value, register, code offset, label count) right after store_bits: a load of that
    # value into that register at the same offset, with no label in between, is redundant
    _just_stored: tuple | None = None

    def slot(self, v, disp: int = 0, size: int | None = None) -> Mem:
        return Mem(RBP, disp=self.frame.offset(v) + disp, size=size)

    def loc(self, v) -> Reg | Mem:
        """Where scalar `v` lives: its register under -O (regalloc.py), else its slot."""
        return self.regs.get(id(v)) or self.slot(v)

    def gpr(self, v) -> Reg | None:
        """The general-purpose register holding `v`, if any."""
        r = self.regs.get(id(v))
        return r if r is not None and r.kind == GPR else None

    def xmm(self, v) -> Reg | None:
        """The xmm register holding float `v`, if any."""
        r = self.regs.get(id(v))
        return r if r is not None and r.kind == XMM else None

    def source(self, v) -> Reg | Imm | Mem | None:
        """`v` as a 64-bit integer source operand without a load (register, imm32 or its
        slot), or None when it must be loaded first."""
        if isinstance(v, Const) and not v.type.is_float:
            return imm32(v)
        r = self.regs.get(id(v))
        if r is not None:
            return r if r.kind == GPR else None
        if isinstance(v, (Param, Instr, Local)) and not is_alloca(v) and \
                self.frame.has(v):
            return self.slot(v)
        return None

    def mov(self, dst: Reg, src: Reg) -> None:
        """Register-to-register copy of 64 bits (nothing when they are the same)."""
        if dst != src:
            self.asm.emit("mov", dst, src)

    def symbol_address(self, v, reg: Reg) -> None:
        imported = (isinstance(v, Global) and v.linkage == "import") or \
            (isinstance(v, Function) and v.is_extern)
        if imported:
            self.asm.emit("mov", reg, rip(v.symbol, got=True))
        else:
            self.asm.emit("lea", reg, rip(v.symbol))

    def load_bits(self, v, reg: Reg) -> None:
        """Load scalar `v` into 64-bit `reg` in its canonical form."""
        e = self.asm.emit
        if isinstance(v, Const):
            bits = const_bits(v)
            if bits == 0:
                e("xor", resize(reg, 32), resize(reg, 32))
            elif 0 < bits < (1 << 32):
                e("mov", resize(reg, 32), Imm(bits))
            else:
                e("mov", reg, Imm(bits))
        elif isinstance(v, Undef):
            e("xor", resize(reg, 32), resize(reg, 32))
        elif isinstance(v, (Global, Function)):
            self.symbol_address(v, reg)
        elif is_alloca(v):
            e("lea", reg, self.slot(v))
        elif isinstance(v, (Param, Instr, Local)):
            if self._just_stored == (id(v), reg, self.asm.offset, len(self.asm.labels)):
                return   # the previous instruction stored this very register
            src = self.regs.get(id(v))
            if src is not None and src.kind == XMM:   # canonical: f32 bits zero-extended
                if v.type.size == 4:
                    e("movd", resize(reg, 32), src)
                else:
                    e("movq", reg, src)
            elif src is not None:
                self.mov(reg, src)
            else:
                e("mov", reg, self.slot(v))
        else:
            raise ice(f"cannot load operand {v!r}")

    def load_xmm(self, v, x: Reg) -> None:
        """Load float `v` into xmm register `x` (low 4 or 8 bytes)."""
        src = self.regs.get(id(v))
        if isinstance(v, (Const, Undef)):
            if isinstance(v, Undef) or const_bits(v) == 0:
                self.asm.emit("xorps", x, x)
                return
            self.load_bits(v, R11)
            self.asm.emit("movq", x, R11)
        elif src is not None and src.kind == XMM:
            if src != x:
                self.asm.emit("movaps", x, src)
        elif src is not None:
            self.asm.emit("movq", x, src)
        else:
            mn = "movss" if v.type.size == 4 else "movsd"
            self.asm.emit(mn, x, self.slot(v))

    def put_bits(self, ins, reg: Reg) -> None:
        """Write canonical 64-bit `reg` to `ins`'s register or slot."""
        dst = self.regs.get(id(ins))
        if dst is not None and dst.kind == XMM:
            self.asm.emit("movq", dst, reg)
        elif dst is not None:
            self.mov(dst, reg)
        else:
            self.asm.emit("mov", self.slot(ins), reg)
        self._just_stored = (id(ins), reg, self.asm.offset, len(self.asm.labels))

    def store_bits(self, ins, reg: Reg, raw: bool = False) -> None:
        """Store 64-bit `reg` to the result slot of `ins`, normalising unless `raw`."""
        if not raw:
            normalize(self.asm, ins.type, reg)
        self.put_bits(ins, reg)

    def store_xmm(self, ins, x: Reg) -> None:
        dst = self.regs.get(id(ins))
        if dst is not None and dst.kind == XMM:
            if dst != x:
                self.asm.emit("movaps", dst, x)
        elif ins.type.size == 4:
            if dst is not None:
                self.asm.emit("movd", resize(dst, 32), x)
            else:
                self.asm.emit("movd", resize(R11, 32), x)
                self.asm.emit("mov", self.slot(ins), R11)
        elif dst is not None:
            self.asm.emit("movq", dst, x)
        else:
            self.asm.emit("movsd", self.slot(ins), x)

    def copy_value(self, dst, v) -> None:
        """Scalar `v` into `dst`'s location (local.get / local.set): register to register
        directly, floats through xmm0, the rest through rax."""
        if self.regs.get(id(dst)) is not None and self.regs.get(id(dst)) == self.regs.get(id(v)):
            return
        if dst.type.is_float and (self.xmm(dst) is not None or self.xmm(v) is not None):
            x = self.xmm(v) or self.xmm(dst) or XMM0
            self.load_xmm(v, x)
            self.store_xmm(dst, x)
            return
        reg = self.gpr(v) if self.gpr(v) is not None else (self.gpr(dst) or RAX)
        self.load_bits(v, reg)
        self.put_bits(dst, reg)

    # -- aggregate bytes ------------------------------------------------------------------
    def copy(self, dst: Reg, dst_disp: int, src: Reg, src_disp: int, size: int) -> None:
        """Copy `size` bytes [src+src_disp] -> [dst+dst_disp] through r11 (inline), or
        through libc memcpy for big blocks (clobbers caller-saved registers)."""
        e = self.asm.emit
        if size > 256:
            c0, c1, c2 = self.abi.C_ARGS
            e("lea", RAX, Mem(src, disp=src_disp))
            e("lea", c0, Mem(dst, disp=dst_disp))
            e("mov", c1, RAX)
            e("mov", c2, Imm(size))
            e("call", Sym("memcpy"))
            return
        off = 0
        for width in (8, 4, 2, 1):
            while size - off >= width:
                r = resize(R11, width * 8)
                e("mov", r, Mem(src, disp=src_disp + off))
                e("mov", Mem(dst, disp=dst_disp + off), r)
                off += width

    def zero(self, base: Reg, disp: int, size: int) -> None:
        e = self.asm.emit
        if size > 256:
            c0, c1, c2 = self.abi.C_ARGS
            e("lea", c0, Mem(base, disp=disp))
            e("xor", resize(c1, 32), resize(c1, 32))
            e("mov", c2, Imm(size))
            e("call", Sym("memset"))
            return
        e("xor", resize(R11, 32), resize(R11, 32))
        off = 0
        for width in (8, 4, 2, 1):
            while size - off >= width:
                e("mov", Mem(base, disp=disp + off), resize(R11, width * 8))
                off += width

    def agg_address(self, v, reg: Reg) -> None:
        """The address of an aggregate value's bytes (its slot)."""
        if isinstance(v, Undef):
            raise ice("aggregate undef has no storage")
        self.asm.emit("lea", reg, self.slot(v))
