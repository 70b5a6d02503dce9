"""Arithmetic, comparisons and value conversions.

Signedness comes from the IR operand type: div/rem/shr/min/max/cvt pick .s or .u; unsigned
compares use .lo/.ls/.hi/.hs. Float add/sub/mul are plain `add.f32` etc. by default, which
lets ptxas contract a*b+c into one FMA (LANGUAGE.md §12.7, like nvcc's --fmad=true); with
`--fp-contract=off` (`em.contract` False) they are `.rn`, each separately rounded, which
also forbids contraction. div is always `.rn` (IEEE). Float `!=` is
the unordered `neu`, so NaN != x is true as in C; the other float predicates are ordered.
Float -> int truncates toward zero (`cvt.rzi`); int -> float and f64 -> f32 round to nearest.
8-bit integers follow the normalization invariant of regs.py.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Instr
from ...ir.types import BoolType, FloatType, IntType, Type
from . import ops as I, regs

INT_OPS = {"add": "add", "sub": "sub", "mul": "mul.lo", "div": "div", "rem": "rem",
           "min": "min", "max": "max"}
FLOAT_OPS = {"add": "add.rn", "sub": "sub.rn", "mul": "mul.rn", "div": "div.rn",
             "min": "min", "max": "max"}
CONTRACTIBLE = ("add", "sub", "mul")
FLOAT = {16: "f16", 32: "f32", 64: "f64"}          # float width -> PTX type
SIGNED_PRED = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
UNSIGNED_PRED = {"eq": "eq", "ne": "ne", "lt": "lo", "le": "ls", "gt": "hi", "ge": "hs"}
FLOAT_PRED = {"eq": "eq", "ne": "neu", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
# ops whose 16-bit result can differ from the 8-bit answer in bits 8..15
_RENORMALIZE = {"add", "sub", "mul", "shl", "neg", "not"}


def normalize8(em, t: Type, r: str) -> None:
    """Re-extend an 8-bit value in a 16-bit register from its bit 7 (regs.py invariant)."""
    if regs.is_small_int(t):
        em.op(I.CVT["s16", "s8", ""] if t.signed else I.CVT["u16", "u8", ""], r, r)


def float_op(em, op: str, bits: int) -> str:
    """The opcode of an f32/f64 add/sub/mul/div/min/max under the contraction setting."""
    if em.contract and op in CONTRACTIBLE:
        return I.BINARY[op, FLOAT[bits]]
    return I.BINARY[FLOAT_OPS[op], FLOAT[bits]]


def _note_contraction(em, ins: Instr) -> None:
    """Record an add/sub fed by a float multiply: a pair ptxas may fuse (remark)."""
    if ins.op in ("add", "sub") and any(isinstance(o, Instr) and o.op == "mul"
                                        for o in ins.operands):
        em.contracted.append(ins)


def mutable(em, v) -> bool:
    """True when `v`'s register is a local's register (it may be overwritten later)."""
    return isinstance(v, Instr) and v in em.alias_gets


def alias_or_mov(em, ins: Instr, src) -> None:
    """Give `ins` the same bits as `src` without an instruction when that is safe."""
    if em.imms and id(src) in em.imms:           # a known immediate stays one
        em.define_imm(ins, em.imms[id(src)])
        return
    if not isinstance(src, Const) and not mutable(em, src):
        em.define(ins, em.reg(src))
        return
    d = em.result(ins)
    em.op(I.MOV[regs.bits(ins.type)], d, em.val(src))


def _first(em, v) -> str:
    # PTX accepts immediates in either source position (checked with ptxas 13.0).
    return em.val(v)


def lower_binop(em, ins: Instr) -> None:
    a, b = ins.operands
    t = ins.type
    if isinstance(t, BoolType):
        em.op(I.BINARY[ins.op, "pred"], em.result(ins), em.reg(a), em.reg(b))
        return
    if ins.op in ("and", "or", "xor"):
        em.op(I.BINARY[ins.op, regs.untyped(t)], em.result(ins), _first(em, a), em.val(b))
        return
    if ins.op in ("shl", "shr"):
        _shift(em, ins)
        return
    if isinstance(t, FloatType):
        if ins.op not in FLOAT_OPS:
            raise error("E0505", f"{ins.op} on {t} has no PTX lowering", ins.span)
        name = float_op(em, ins.op, t.bits)
        if em.contract:
            _note_contraction(em, ins)
    else:
        name = I.BINARY[INT_OPS[ins.op], regs.arith(t)]
    d = em.result(ins)
    va, vb = _first(em, a), em.val(b)
    em.op(name, d, va, vb)
    if ins.op in _RENORMALIZE:
        normalize8(em, t, d)


def shift_count(em, b) -> str:
    """PTX shift amounts are .u32 whatever the shifted type."""
    if isinstance(b, Const):
        return str(int(b.value) & 0xFFFFFFFF)
    bits = regs.reg_bits(b.type)
    if bits == 32:
        return em.reg(b)
    r = em.new("r")
    src = em.reg(b)
    em.op(I.CVT["u32", "u16" if bits == 16 else "u64", ""], r, src)
    return r


def _shift(em, ins: Instr) -> None:
    a, b = ins.operands
    t = ins.type
    count = shift_count(em, b)
    d = em.result(ins)
    kind = regs.untyped(t) if ins.op == "shl" else regs.arith(t)
    em.op(I.BINARY[ins.op, kind], d, _first(em, a), count)
    if ins.op == "shl":
        normalize8(em, t, d)


def lower_unop(em, ins: Instr) -> None:
    a = em.reg(ins.operands[0])
    t = ins.type
    d = em.result(ins)
    if isinstance(t, BoolType):
        em.op("not.pred", d, a)
    elif ins.op == "not":
        em.op(I.UNARY["not", regs.untyped(t)], d, a)
    elif isinstance(t, FloatType):
        em.op(I.UNARY["neg", FLOAT[t.bits]], d, a)
    else:
        em.op(I.UNARY["neg", regs.signed(t)], d, a)
    normalize8(em, t, d)


def lower_cmp(em, ins: Instr) -> None:
    a, b = ins.operands
    pred, t = ins.attrs["pred"], a.type
    d = em.result(ins)
    if isinstance(t, BoolType):
        _cmp_bool(em, pred, em.reg(a), em.reg(b), d)
        return
    if isinstance(t, FloatType):
        name = FLOAT_PRED[pred]
    elif isinstance(t, IntType) and t.signed:
        name = SIGNED_PRED[pred]
    else:
        name = UNSIGNED_PRED[pred]
    va, vb = _first(em, a), em.val(b)
    em.op(I.SETP[name, regs.arith(t)], d, va, vb)


def _cmp_bool(em, pred: str, a: str, b: str, d: str) -> None:
    if pred in ("eq", "ne"):
        em.op("xor.pred", d, a, b)
        if pred == "eq":
            em.op("not.pred", d, d)
        return
    ra, rb = em.new("r"), em.new("r")        # false < true, as unsigned 0 < 1
    em.op("selp.u32", ra, "1", "0", a)
    em.op("selp.u32", rb, "1", "0", b)
    em.op(I.SETP[UNSIGNED_PRED[pred], "u32"], d, ra, rb)


def convert_into(em, d: str, src: str, st: Type, dt: Type) -> None:
    """Emit the conversion of register `src` (type st) into register `d` (type dt)."""
    if isinstance(st, BoolType):
        one, zero = (regs.imm(dt, 1.0), regs.imm(dt, 0.0)) if dt.is_float else ("1", "0")
        em.op(I.SELP[regs.bits(dt)], d, one, zero, src)
    elif isinstance(dt, BoolType):
        pred = "neu" if st.is_float else "ne"
        em.op(I.SETP[pred, regs.arith(st)], d, src, regs.imm(st, 0))
    elif st.is_float and dt.is_float:
        em.op("cvt.f64.f32" if dt.bits == 64 else "cvt.rn.f32.f64", d, src)
    elif st.is_float:
        em.op(I.CVT[regs.exact(dt), regs.arith(st), "rzi"], d, src)
    elif dt.is_float:
        em.op(I.CVT[regs.arith(dt), regs.arith(st), "rn"], d, src)
    elif regs.reg_bits(st) == regs.reg_bits(dt) and not regs.is_small_int(dt):
        em.op(I.MOV[regs.untyped(dt)], d, src)
    else:
        em.op(I.CVT[regs.exact(dt), regs.exact(st), ""], d, src)


def lower_convert(em, ins: Instr) -> None:
    (a,) = ins.operands
    st, dt = a.type, ins.type
    same_bits = isinstance(st, IntType) and isinstance(dt, IntType) and \
        regs.reg_bits(st) == regs.reg_bits(dt) and not regs.is_small_int(dt)
    if same_bits:                             # i32 <-> u32, i8 -> i16, ...: no instruction
        alias_or_mov(em, ins, a)
        return
    convert_into(em, em.result(ins), em.reg(a), st, dt)


def lower_bitcast(em, ins: Instr) -> None:
    (a,) = ins.operands
    st, dt = a.type, ins.type
    if regs.rclass(st) == regs.rclass(dt) and not (regs.is_small_int(dt) and st != dt):
        alias_or_mov(em, ins, a)
        return
    d = em.result(ins)
    if regs.is_small_int(dt) or regs.is_small_int(st):
        convert_into(em, d, em.reg(a), st, dt)     # 8-bit <-> 8-bit: renormalize
        return
    em.op(I.MOV[regs.untyped(dt)], d, em.reg(a))


def lower_ptrtoint(em, ins: Instr) -> None:
    (a,) = ins.operands
    if regs.reg_bits(ins.type) == 64:
        alias_or_mov(em, ins, a)
        return
    em.op(I.CVT[regs.exact(ins.type), "u64", ""], em.result(ins), em.reg(a))


def lower_inttoptr(em, ins: Instr) -> None:
    (a,) = ins.operands
    if regs.reg_bits(a.type) == 64:
        alias_or_mov(em, ins, a)
        return
    ext = "s64" if a.type.signed else "u64"
    em.op(I.CVT[ext, regs.arith(a.type), ""], em.result(ins), em.reg(a))


LOWER = {
    **{op: lower_binop for op in ("add", "sub", "mul", "div", "rem", "and", "or", "xor",
                                  "shl", "shr", "min", "max")},
    "neg": lower_unop, "not": lower_unop, "cmp": lower_cmp, "convert": lower_convert,
    "bitcast": lower_bitcast, "ptrtoint": lower_ptrtoint, "inttoptr": lower_inttoptr,
}
