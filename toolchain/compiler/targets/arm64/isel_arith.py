"""AArch64 selection of arithmetic, comparisons, select and conversions.

Integers are computed in 64-bit registers on canonical operands and re-extended, exactly as
the x86-64 selector does, so both targets print the same results: shift counts are masked
to width-1, `>>` is asr on sign-extended or lsr on zero-extended values, float min/max
return the second operand unless the first is strictly smaller/greater (x86 minsd/maxsd),
float comparisons are false on NaN except `!=`, and float -> uint64 converts values below
2^63 as signed (as x86's cvttsd2si path does).
"""
from __future__ import annotations

from ...ir.module import Const
from ...ir.types import IntType
from ..common.host import const_bits
from .isel_values import ice
from .operands import Imm, Sym
from .regs import D, IP0, S, X, XZR, w

A, B, C = X[9], X[10], X[11]
_INT_OPS = {"add": "add", "sub": "sub", "mul": "mul", "and": "and", "or": "orr",
            "xor": "eor"}
_FP_OPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_SIGNED_CC = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_UNSIGNED_CC = {"eq": "eq", "ne": "ne", "lt": "lo", "le": "ls", "gt": "hi", "ge": "hs"}
_FLOAT_CC = {"eq": "eq", "ne": "ne", "lt": "mi", "le": "ls", "gt": "gt", "ge": "ge"}


def _signed(t) -> bool:
    return isinstance(t, IntType) and t.signed


def add_imm(v) -> int | None:
    """A constant whose 64-bit image is within ±4095 (an add/sub/cmp immediate)."""
    if not isinstance(v, Const) or v.type.is_float:
        return None
    bits = const_bits(v) & (1 << 64) - 1
    signed = bits - (1 << 64) if bits >> 63 else bits
    return signed if -4096 < signed < 4096 else None


def fregs(t):
    """The two FP scratch registers viewed at the type's size."""
    return (S[16], S[17]) if t.size == 4 else (D[16], D[17])


class ArithMixin:
    def op_binary(self, ins) -> None:
        a, b = ins.operands
        e = self.asm.emit
        if ins.type.is_float:
            fa, fb = fregs(ins.type)
            self.load_fp(a, fa)
            self.load_fp(b, fb)
            if ins.op in _FP_OPS:
                e(_FP_OPS[ins.op], fa, fa, fb)
            elif ins.op in ("min", "max"):
                e("fcmp", fa, fb)
                e("fcsel", fa, fa, fb, "mi" if ins.op == "min" else "gt")
            else:
                raise ice(f"{ins.op} on {ins.type}")
            self.store_fp(ins, fa)
            return
        op, signed = ins.op, _signed(ins.type)
        dst = self.home(ins, A)          # operands are read before dst is written
        na = self.gp(a, A)
        imm = add_imm(b)
        if imm is not None and op in ("add", "sub"):   # a small constant is an immediate
            if imm < 0:
                op, imm = ("sub" if op == "add" else "add"), -imm
            e(op, dst, na, Imm(imm))
            self.store_bits(ins, dst)
            return
        nb = self.gp(b, B)
        if op in _INT_OPS:
            e(_INT_OPS[op], dst, na, nb)
        elif op == "div":
            e("sdiv" if signed else "udiv", dst, na, nb)
        elif op == "rem":
            e("sdiv" if signed else "udiv", C, na, nb)
            e("msub", dst, C, nb, na)
        elif op in ("shl", "shr"):
            self.mov_imm(C, ins.type.bits - 1)
            e("and", B, nb, C)
            e("lsl" if op == "shl" else "asr" if signed else "lsr", dst, na, B)
        elif op in ("min", "max"):
            cc = ("lt" if op == "min" else "gt") if signed else ("lo" if op == "min" else "hi")
            e("cmp", na, nb)
            e("csel", dst, na, nb, cc)
        else:
            raise ice(f"unknown binary op {op}")
        self.store_bits(ins, dst)

    def op_neg(self, ins) -> None:
        e = self.asm.emit
        self.load_bits(ins.operands[0], A)
        if ins.type.is_float:
            self.mov_imm(B, 1 << (ins.type.bits - 1))
            e("eor", A, A, B)
            self.store_bits(ins, A, raw=True)
            return
        e("neg", A, A)
        self.store_bits(ins, A)

    def op_not(self, ins) -> None:
        self.load_bits(ins.operands[0], A)
        if ins.type.is_bool:
            self.mov_imm(B, 1)
            self.asm.emit("eor", A, A, B)
        else:
            self.asm.emit("mvn", A, A)
        self.store_bits(ins, A)

    def op_cmp(self, ins) -> None:
        a, b = ins.operands
        pred = ins.attrs["pred"]
        e = self.asm.emit
        if a.type.is_float:
            fa, fb = fregs(a.type)
            self.load_fp(a, fa)
            self.load_fp(b, fb)
            e("fcmp", fa, fb)
            cc = _FLOAT_CC[pred]
        else:
            na = self.gp(a, A)
            imm = add_imm(b)
            if imm is not None and imm >= 0:
                e("cmp", na, Imm(imm))
            else:
                e("cmp", na, self.gp(b, B))
            cc = (_SIGNED_CC if _signed(a.type) else _UNSIGNED_CC)[pred]
        if self.fuses_with_branch(ins):   # the next cbr branches on the flags instead
            self.flags = (ins, cc)
            return
        e("cset", w(A), cc)
        self.store_bits(ins, A, raw=True)

    def op_select(self, ins) -> None:
        cond, a, b = ins.operands
        e = self.asm.emit
        if ins.type.is_aggregate:
            other, done = self.asm.new_label("Lsel"), self.asm.new_label("Lsel")
            self.load_bits(cond, A)
            e("cbz", A, Sym(other))
            self.copy_value(ins, a)
            e("b", Sym(done))
            self.asm.label(other)
            self.copy_value(ins, b)
            self.asm.label(done)
            return
        self.load_bits(cond, A)
        self.load_bits(a, B)
        self.load_bits(b, C)
        e("cmp", A, Imm(0))
        e("csel", B, B, C, "ne")
        self.store_bits(ins, B, raw=True)

    # -- conversions ------------------------------------------------------------------------
    def op_convert(self, ins) -> None:
        src, to = ins.operands[0], ins.type
        frm = src.type
        e = self.asm.emit
        if to.is_bool:
            if frm.is_float:
                fa, fb = fregs(frm)
                self.load_fp(src, fa)
                e("fmov", fb, XZR if frm.size == 8 else w(XZR))
                e("fcmp", fa, fb)
            else:
                self.load_bits(src, A)
                e("cmp", A, Imm(0))
            e("cset", w(A), "ne")
            self.store_bits(ins, A, raw=True)
        elif frm.is_float and to.is_float:
            fa, _ = fregs(frm)
            ft, _ = fregs(to)
            self.load_fp(src, fa)
            if frm.size != to.size:
                e("fcvt", ft, fa)
            self.store_fp(ins, ft)
        elif to.is_float:
            ft, _ = fregs(to)
            self.load_bits(src, A)
            unsigned64 = isinstance(frm, IntType) and not frm.signed and frm.bits == 64
            e("ucvtf" if unsigned64 else "scvtf", ft, A)
            self.store_fp(ins, ft)
        elif frm.is_float:
            self._float_to_int(ins, src, to)
        else:   # int/bool -> int: re-extending the canonical operand is the conversion
            dst, reg = self.home(ins, A), self.gp(src, A)
            if dst != reg:
                e("mov", dst, reg)
            self.store_bits(ins, dst)

    def _float_to_int(self, ins, src, to) -> None:
        e = self.asm.emit
        fa, fb = fregs(src.type)
        self.load_fp(src, fa)
        if to.signed or to.bits < 64:
            e("fcvtzs", A, fa)
            self.store_bits(ins, A)
            return
        big, done = self.asm.new_label("Lf2u"), self.asm.new_label("Lf2u")
        bits = 0x5F000000 if src.type.size == 4 else 0x43E0000000000000   # 2^63
        self.mov_imm(IP0, bits)
        e("fmov", fb, IP0 if src.type.size == 8 else w(IP0))
        e("fcmp", fa, fb)
        e("b.ge", Sym(big))
        e("fcvtzs", A, fa)
        e("b", Sym(done))
        self.asm.label(big)
        e("fcvtzu", A, fa)
        self.asm.label(done)
        self.store_bits(ins, A)

    def op_bitcast(self, ins) -> None:
        src = ins.operands[0]
        self.load_bits(src, A)
        if src.type.is_float and src.type.size == 4:
            self.asm.emit("mov", w(A), w(A))
        self.store_bits(ins, A, raw=not ins.type.is_int and not ins.type.is_bool)
