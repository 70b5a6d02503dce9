"""Selection of arithmetic, comparison, select and conversion operations.

Integers are computed in 64-bit registers on canonical (extended) operands and re-extended
to the result type, so every width and signedness shares one code path: wrap-around of narrow
types falls out of `normalize`, signed division is exact for narrow types, and `>>` is `sar`
on sign-extended or `shr` on zero-extended values. Shift counts are masked to width-1 (the
x86 rule for 32/64-bit operands, applied to every width). Floats use scalar SSE; comparisons
follow C on NaN: `!=` is true, every other predicate false.
"""
from __future__ import annotations

from ...ir.module import Const, Undef
from ...ir.types import FloatType, IntType, Type
from .isel_values import const_bits, ice, imm32
from .operands import Imm, Sym
from .regs import Reg
from .operands import Mem
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


_INVERSE_CC = {"e": "ne", "ne": "e", "l": "ge", "ge": "l", "le": "g", "g": "le", "b": "ae",
               "ae": "b", "be": "a", "a": "be"}


class ArithMixin:
    def op_binary(self, ins) -> None:
        a, b = ins.operands
        if ins.type.is_float:
            self._float_binary(ins, a, b)
            return
        op = ins.op
        if op in ("div", "rem") and self._divide_by_constant(ins, a, b):
            return
        if op in _INT_OPS or (op in ("shl", "shr") and imm32(b) is not None):
            self._two_address(ins, a, b)
            return
        e = self.asm.emit
        self.load_bits(a, RAX)
        self.load_bits(b, RCX)
        if op in ("div", "rem"):
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

    def _two_address(self, ins, a, b) -> None:
        """add/sub/mul/and/or/xor, or a shift by a constant, computed in the result's own
        register when it has one (`dst op= b`, b a register, imm32 or slot), else in rax."""
        e, op = self.asm.emit, ins.op
        dst = self.gpr(ins)
        if op in ("add", "mul", "and", "or", "xor") and dst is not None and \
                self.gpr(b) == dst != self.gpr(a):
            a, b = b, a                       # commutative: keep dst's own operand first
        work = dst if dst is not None and self.gpr(b) != dst else RAX
        imm = imm32(b)
        ra, rb = self.gpr(a), self.gpr(b)
        if dst is not None and ra is not None and ra != dst and (
                op == "add" and (rb is not None or imm is not None) or
                op == "sub" and imm is not None and imm.value != -(1 << 31)):
            disp = 0 if imm is None else imm.value if op == "add" else -imm.value
            e("lea", dst, Mem(ra, None if imm is not None else rb, 1, disp))
            self.store_bits(ins, dst)         # three-address add: no copy first
            return
        if op in ("shl", "shr"):
            self.load_bits(a, work)
            e("shl" if op == "shl" else "sar" if _signed(ins.type) else "shr", work,
              Imm(imm.value & (ins.type.bits - 1)))
        elif op == "mul" and imm is not None:
            src = self.source(a)
            if not isinstance(src, (Reg, Mem)):
                self.load_bits(a, work)
                src = work
            e("imul", work, src, imm)
        else:
            src = self.source(b)
            if src is None or isinstance(src, Imm) and op == "mul":
                self.load_bits(b, RCX)
                src = RCX
            self.load_bits(a, work)
            e(_INT_OPS[op], work, src)
        self.store_bits(ins, work)

    def _divide_by_constant(self, ins, a, b) -> bool:
        """Division and remainder by a constant as a multiply by its reciprocal (Hacker's
        Delight ch. 10; operands are canonical 64-bit, so one sequence serves every width).
        Divisors 0, +-1 and beyond 2^63 keep the div instruction (and its trap)."""
        if not isinstance(b, Const) or not isinstance(ins.type, IntType):
            return False
        signed = _signed(ins.type)
        bits = const_bits(b) & (1 << 64) - 1
        d = bits - (1 << 64) if signed and bits >> 63 else bits
        if not 2 <= abs(d) < (1 << 63):
            return False
        e = self.asm.emit
        self.load_bits(a, RCX)                 # n stays in rcx
        if signed:
            m, shift = signed_magic(d)
            e("mov", RAX, Imm(m))
            e("imul", RCX)                     # rdx = high 64 bits of n * m (signed)
            if d > 0 and m < 0:
                e("add", RDX, RCX)
            elif d < 0 and m > 0:
                e("sub", RDX, RCX)
            if shift:
                e("sar", RDX, Imm(shift))
            e("mov", RAX, RDX)
            e("shr", RAX, Imm(63))
            e("add", RDX, RAX)                 # round toward zero: +1 when negative
            q = RDX
        elif d & (d - 1) == 0:
            e("mov", RDX, RCX)
            e("shr", RDX, Imm(d.bit_length() - 1))
            q = RDX
        else:
            m, shift, wide = unsigned_magic(d)
            e("mov", RAX, Imm(m))
            e("mul", RCX)                      # rdx = high 64 bits of n * m
            if wide:                           # m has 65 bits: add n back without overflow
                e("mov", RAX, RCX)
                e("sub", RAX, RDX)
                e("shr", RAX, Imm(1))
                e("add", RDX, RAX)
                shift -= 1
            if shift:
                e("shr", RDX, Imm(shift))
            q = RDX
        if ins.op == "rem":                    # n - q * d
            imm = imm32(b) if signed else (Imm(d) if d < (1 << 31) else None)
            if imm is not None:
                e("imul", RDX, q, imm)
            else:
                e("mov", RAX, Imm(bits))
                e("imul", RDX, RAX)
            e("mov", RAX, RCX)
            e("sub", RAX, RDX)
            q = RAX
        self.store_bits(ins, q)
        return True

    def _float_binary(self, ins, a, b) -> None:
        if ins.op not in _SSE_OPS:
            raise ice(f"{ins.op} on {ins.type}")
        dst = self.xmm(ins)
        if id(a) in self.folded:              # only commutative ops fold operand a
            a, b = b, a
        if ins.op in ("add", "mul") and dst is not None and self.xmm(b) == dst != self.xmm(a) \
                and id(b) not in self.folded:
            a, b = b, a                       # commutative (IEEE add/mul are)
        if id(b) in self.folded:              # the load right before: a memory operand
            src = self.address(b.operands[0])
            work = dst if dst is not None and self.xmm(a) != XMM0 else XMM0
            self.load_xmm(a, work)
            self.asm.emit(_SSE_OPS[ins.op] + _sse(ins.type), work, src)
            self.store_xmm(ins, work)
            return
        work = dst if dst is not None and self.xmm(b) != dst else XMM0
        src = self.xmm(b)
        if src is None:
            if self.gpr(b) is None and not isinstance(b, (Const, Undef)) and \
                    self.frame.has(b):
                src = self.slot(b)
            else:
                self.load_xmm(b, XMM1)
                src = XMM1
        self.load_xmm(a, work)
        self.asm.emit(_SSE_OPS[ins.op] + _sse(ins.type), work, src)
        self.store_xmm(ins, work)

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
            lhs = self.gpr(a)
            if lhs is None:
                self.load_bits(a, RAX)
                lhs = RAX
            rhs = self.source(b)
            if rhs is None:
                self.load_bits(b, RCX)
                rhs = RCX
            e("cmp", lhs, rhs)
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
            reg = self.gpr(ins) or RAX
            self.load_bits(src, reg)
            self.store_bits(ins, reg)

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
        if (src.type.is_float and src.type.size == 4) or \
                (ins.type.is_float and ins.type.size == 4):
            self.asm.emit("mov", EAX, EAX)   # float32 bits: the upper half is zero
        self.store_bits(ins, RAX, raw=not ins.type.is_int and not ins.type.is_bool)


def _zero(t: Type):
    return Const(t, 0.0)


def _two63(t: Type):
    return Const(t, float(1 << 63))



def unsigned_magic(d: int) -> tuple[int, int, bool]:
    """(m, s, wide) with floor(n / d) == (n * m) >> (64 + s) for every 64-bit n, 2 <= d <
    2^63 not a power of two; `wide` when m needs 65 bits (Granlund-Montgomery)."""
    for s in range(64):
        m = -(-(1 << (64 + s)) // d)
        if m * d - (1 << (64 + s)) <= (1 << s):
            if m < (1 << 64):
                return m, s, False
            break
    s = (d - 1).bit_length()
    return -(-(1 << (64 + s)) // d) - (1 << 64), s, True


def signed_magic(d: int) -> tuple[int, int]:
    """(M, s) for signed division by d, 2 <= |d| < 2^63 (Hacker's Delight fig. 10-1):
    q = (mulhs(n, M) [+ n if d > 0 > M] [- n if d < 0 < M]) >> s, plus 1 when negative."""
    two63 = 1 << 63
    ad = abs(d)
    t = two63 + (1 if d < 0 else 0)
    anc = t - 1 - t % ad
    p = 63
    q1, r1 = divmod(two63, anc)
    q2, r2 = divmod(two63, ad)
    while True:
        p += 1
        q1, r1 = 2 * q1, 2 * r1
        if r1 >= anc:
            q1, r1 = q1 + 1, r1 - anc
        q2, r2 = 2 * q2, 2 * r2
        if r2 >= ad:
            q2, r2 = q2 + 1, r2 - ad
        delta = ad - r2
        if not (q1 < delta or (q1 == delta and r1 == 0)):
            break
    m = (q2 + 1) & ((1 << 64) - 1)
    if d < 0:
        m = (-m) & ((1 << 64) - 1)
    return (m - (1 << 64) if m >> 63 else m), p - 64
