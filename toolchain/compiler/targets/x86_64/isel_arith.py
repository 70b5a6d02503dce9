"""Selection of arithmetic, comparison, select and conversion operations.

Integers are computed in 64-bit registers on canonical (extended) operands and re-extended
to the result type, so every width and signedness shares one code path: wrap-around of narrow
types falls out of `normalize`, signed division is exact for narrow types, and `>>` is `sar`
on sign-extended or `shr` on zero-extended values. Shift counts are masked to width-1 (the
x86 rule for 32/64-bit operands, applied to every width). Floats use scalar SSE; comparisons
follow C on NaN: `!=` is true, every other predicate false.
"""
from __future__ import annotations

from ...ir.module import Const
from ...ir.types import FloatType, IntType, Type
from .isel_values import const_bits, ice
from .operands import Imm, Sym
from .regs import AL, CL, EAX, ECX, EDX, RAX, RBP, RCX, RDX, XMM0, XMM1

_INT_OPS = {"add": "add", "sub": "sub", "mul": "imul", "and": "and", "or": "or",
            "xor": "xor"}
_SSE_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "min": "min",
            "max": "max"}
_SIGNED_CC = {"eq": "e", "ne": "ne", "lt": "l", "le": "le", "gt": "g", "ge": "ge"}
_UNSIGNED_CC = {"eq": "e", "ne": "ne", "lt": "b", "le": "be", "gt": "a", "ge": "ae"}


def _signed(t: Type) -> bool:
    return isinstance(t, IntType) and t.signed


def _sse(t: Type) -> str:
    return "ss" if t.size == 4 else "sd"


def imm32(v) -> Imm | None:
    """A constant whose 64-bit register image is a sign-extended imm32, as an immediate."""
    if not isinstance(v, Const) or v.type.is_float:
        return None
    bits = const_bits(v) & (1 << 64) - 1
    signed = bits - (1 << 64) if bits >> 63 else bits
    return Imm(signed) if -(1 << 31) <= signed < (1 << 31) else None


_INVERSE_CC = {"e": "ne", "ne": "e", "l": "ge", "ge": "l", "le": "g", "g": "le", "b": "ae",
               "ae": "b", "be": "a", "a": "be"}


class ArithMixin:
    def op_binary(self, ins) -> None:
        a, b = ins.operands
        if ins.type.is_float:
            self._float_binary(ins, a, b)
            return
        e = self.asm.emit
        self.load_bits(a, RAX)
        op = ins.op
        imm = imm32(b)
        if imm is not None and op in _INT_OPS:      # a constant operand is an immediate
            if op == "mul":
                e("imul", RAX, RAX, imm)
            else:
                e(_INT_OPS[op], RAX, imm)
            self.store_bits(ins, RAX)
            return
        if imm is not None and op in ("shl", "shr"):
            count = Imm(imm.value & (ins.type.bits - 1))
            e("shl" if op == "shl" else "sar" if _signed(ins.type) else "shr", RAX, count)
            self.store_bits(ins, RAX)
            return
        self.load_bits(b, RCX)
        if op in _INT_OPS:
            e(_INT_OPS[op], RAX, RCX)
        elif op in ("div", "rem"):
            if _signed(ins.type):
                e("cqo")
                e("idiv", RCX)
            else:
                e("xor", EDX, EDX)
                e("div", RCX)
            if op == "rem":
                e("mov", RAX, RDX)
        elif op in ("shl", "shr"):
            e("and", ECX, Imm(ins.type.bits - 1))
            e("shl" if op == "shl" else "sar" if _signed(ins.type) else "shr", RAX, CL)
        elif op in ("min", "max"):
            cc = ("g" if op == "min" else "l") if _signed(ins.type) else \
                ("a" if op == "min" else "b")
            e("cmp", RAX, RCX)
            e("cmov" + cc, RAX, RCX)
        else:
            raise ice(f"unknown binary op {op}")
        self.store_bits(ins, RAX)

    def _float_binary(self, ins, a, b) -> None:
        if ins.op not in _SSE_OPS:
            raise ice(f"{ins.op} on {ins.type}")
        self.load_xmm(a, XMM0)
        self.load_xmm(b, XMM1)
        self.asm.emit(_SSE_OPS[ins.op] + _sse(ins.type), XMM0, XMM1)
        self.store_xmm(ins, XMM0)

    def op_neg(self, ins) -> None:
        e = self.asm.emit
        self.load_bits(ins.operands[0], RAX)
        if ins.type.is_float:
            if ins.type.size == 4:
                e("xor", EAX, Imm(0x80000000))
            else:
                e("mov", RCX, Imm(1 << 63))
                e("xor", RAX, RCX)
            self.store_bits(ins, RAX, raw=True)
            return
        e("neg", RAX)
        self.store_bits(ins, RAX)

    def op_not(self, ins) -> None:
        self.load_bits(ins.operands[0], RAX)
        if ins.type.is_bool:
            self.asm.emit("xor", EAX, Imm(1))
        else:
            self.asm.emit("not", RAX)
        self.store_bits(ins, RAX)

    def op_cmp(self, ins) -> None:
        a, b = ins.operands
        pred = ins.attrs["pred"]
        e = self.asm.emit
        if a.type.is_float:
            self._float_cmp(pred, a, b)
        else:
            self.load_bits(a, RAX)
            imm = imm32(b)
            if imm is None:
                self.load_bits(b, RCX)
            e("cmp", RAX, imm or RCX)
            cc = (_SIGNED_CC if _signed(a.type) else _UNSIGNED_CC)[pred]
            if self.fuses_with_branch(ins):   # the next cbr jumps on the flags instead
                self.flags = (ins, cc)
                return
            e("set" + cc, AL)
        e("movzx", EAX, AL)
        self.store_bits(ins, RAX, raw=True)

    def _float_cmp(self, pred: str, a, b) -> None:
        """ucomis sets ZF=PF=CF=1 when unordered; `a`/`ae` after ordering the operands so
        that the wanted relation is 'above' are false on NaN, as C requires."""
        e = self.asm.emit
        ucom = "ucomi" + _sse(a.type)
        swap = pred in ("lt", "le")
        self.load_xmm(b if swap else a, XMM0)
        self.load_xmm(a if swap else b, XMM1)
        e(ucom, XMM0, XMM1)
        if pred == "eq":
            e("sete", AL)
            e("setnp", CL)
            e("and", AL, CL)
        elif pred == "ne":
            e("setne", AL)
            e("setp", CL)
            e("or", AL, CL)
        else:
            e("seta" if pred in ("gt", "lt") else "setae", AL)

    def op_select(self, ins) -> None:
        cond, a, b = ins.operands
        e = self.asm.emit
        if ins.type.is_aggregate:
            self._select_aggregate(ins, cond, a, b)
            return
        self.load_bits(cond, RAX)
        self.load_bits(a, RCX)
        self.load_bits(b, RDX)
        e("test", EAX, EAX)
        e("cmove", RCX, RDX)
        self.store_bits(ins, RCX, raw=True)

    def _select_aggregate(self, ins, cond, a, b) -> None:
        e = self.asm.emit
        other, done = self.asm.new_label("Lsel"), self.asm.new_label("Lsel")
        self.load_bits(cond, RAX)
        e("test", EAX, EAX)
        e("je", Sym(other))
        size = ins.type.size
        self.copy(RBP, self.frame.offset(ins), RBP, self.frame.offset(a), size)
        e("jmp", Sym(done))
        self.asm.label(other)
        self.copy(RBP, self.frame.offset(ins), RBP, self.frame.offset(b), size)
        self.asm.label(done)

    # -- conversions ------------------------------------------------------------------------
    def op_convert(self, ins) -> None:
        src, to = ins.operands[0], ins.type
        frm = src.type
        if to.is_bool:
            self._to_bool(ins, src)
        elif frm.is_float and to.is_float:
            self.load_xmm(src, XMM0)
            if frm.size != to.size:
                self.asm.emit("cvtss2sd" if frm.size == 4 else "cvtsd2ss", XMM0, XMM0)
            self.store_xmm(ins, XMM0)
        elif to.is_float:
            self._int_to_float(ins, src, to)
        elif frm.is_float:
            self._float_to_int(ins, src, to)
        else:  # int/bool -> int: operands are canonical, so re-extending is the conversion
            self.load_bits(src, RAX)
            self.store_bits(ins, RAX)

    def _to_bool(self, ins, src) -> None:
        e = self.asm.emit
        if src.type.is_float:
            self._float_cmp("ne", src, _zero(src.type))
        else:
            self.load_bits(src, RAX)
            e("test", RAX, RAX)
            e("setne", AL)
        e("movzx", EAX, AL)
        self.store_bits(ins, RAX, raw=True)

    def _int_to_float(self, ins, src, to: FloatType) -> None:
        e = self.asm.emit
        cvt = "cvtsi2" + _sse(to)
        self.load_bits(src, RAX)
        if not (isinstance(src.type, IntType) and not src.type.signed and src.type.bits == 64):
            e(cvt, XMM0, RAX)
            self.store_xmm(ins, XMM0)
            return
        # uint64 >= 2^63: halve keeping the low bit (round-to-odd), convert, double.
        big, done = self.asm.new_label("Lu2f"), self.asm.new_label("Lu2f")
        e("test", RAX, RAX)
        e("js", Sym(big))
        e(cvt, XMM0, RAX)
        e("jmp", Sym(done))
        self.asm.label(big)
        e("mov", RCX, RAX)
        e("shr", RCX, Imm(1))
        e("and", EAX, Imm(1))
        e("or", RCX, RAX)
        e(cvt, XMM0, RCX)
        e("add" + _sse(to), XMM0, XMM0)
        self.asm.label(done)
        self.store_xmm(ins, XMM0)

    def _float_to_int(self, ins, src, to: IntType) -> None:
        e = self.asm.emit
        cvt = "cvtt" + _sse(src.type) + "2si"
        self.load_xmm(src, XMM0)
        if to.signed or to.bits < 64:
            e(cvt, RAX, XMM0)        # 64-bit truncation, then wrap to the target width
            self.store_bits(ins, RAX)
            return
        # uint64: values >= 2^63 are converted after subtracting 2^63, then the bit is set.
        big, done = self.asm.new_label("Lf2u"), self.asm.new_label("Lf2u")
        self.load_xmm(_two63(src.type), XMM1)
        e("ucomi" + _sse(src.type), XMM0, XMM1)
        e("jae", Sym(big))
        e(cvt, RAX, XMM0)
        e("jmp", Sym(done))
        self.asm.label(big)
        e("sub" + _sse(src.type), XMM0, XMM1)
        e(cvt, RAX, XMM0)
        e("mov", RCX, Imm(1 << 63))
        e("xor", RAX, RCX)
        self.asm.label(done)
        self.store_bits(ins, RAX)

    def op_bitcast(self, ins) -> None:
        """Same-size reinterpretation (also ptrtoint/inttoptr/addrspacecast)."""
        src = ins.operands[0]
        self.load_bits(src, RAX)
        if src.type.is_float and src.type.size == 4:
            self.asm.emit("mov", EAX, EAX)
        self.store_bits(ins, RAX, raw=not ins.type.is_int and not ins.type.is_bool)
        if ins.type.is_float and ins.type.size == 4:
            self.asm.emit("mov", EAX, EAX)
            self.asm.emit("mov", self.loc(ins), RAX)


def _zero(t: Type):
    return Const(t, 0.0)


def _two63(t: Type):
    return Const(t, float(1 << 63))

