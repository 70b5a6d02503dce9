"""Scalar arithmetic, comparisons, select, numeric conversions and bitcasts.

Signedness comes from the IR operand type (SPIR-V integer types are all signedness 0):
div -> OpSDiv/OpUDiv/OpFDiv; rem -> OpSRem (C truncation: the result takes the dividend's
sign) / OpUMod; shr -> OpShiftRightArithmetic (signed) / OpShiftRightLogical (unsigned);
min/max -> OpenCL.std s_min/u_min/fmin (s_max/u_max/fmax). Float comparisons are ordered
except `ne`, which is OpFUnordNotEqual (true for NaN, as C's != is). bool and/or/xor/not
use the logical opcodes. Pointers compare through OpConvertPtrToU (SPIR-V 1.0 has no
pointer comparison). convert: ints widen by the source's signedness (OpSConvert/
OpUConvert) and narrow by truncation; same-width sign changes are no instruction; float->
int truncates toward zero (OpConvertFToS/FToU); bool -> number is OpSelect 1/0; number ->
bool is != 0 (OpINotEqual / OpFUnordNotEqual, so NaN is true as in C).
"""
from __future__ import annotations

from ...ir.types import BoolType, FloatType, IntType, PtrType
from . import capabilities as caps
from .emit_function import register

_INT = {"add": "OpIAdd", "sub": "OpISub", "mul": "OpIMul", "and": "OpBitwiseAnd",
        "or": "OpBitwiseOr", "xor": "OpBitwiseXor", "shl": "OpShiftLeftLogical"}
_FLOAT = {"add": "OpFAdd", "sub": "OpFSub", "mul": "OpFMul", "div": "OpFDiv",
          "rem": "OpFRem"}
_BOOL = {"and": "OpLogicalAnd", "or": "OpLogicalOr", "xor": "OpLogicalNotEqual"}
_MINMAX = {("min", "s"): "s_min", ("min", "u"): "u_min", ("min", "f"): "fmin",
           ("max", "s"): "s_max", ("max", "u"): "u_max", ("max", "f"): "fmax"}


def _kind(t) -> str:
    if isinstance(t, FloatType):
        return "f"
    if isinstance(t, IntType):
        return "s" if t.signed else "u"
    return "b"


def binary_opcode(op: str, t) -> str | None:
    k = _kind(t)
    if k == "f":
        return _FLOAT.get(op)
    if k == "b":
        return _BOOL.get(op)
    if op == "div":
        return "OpSDiv" if k == "s" else "OpUDiv"
    if op == "rem":
        return "OpSRem" if k == "s" else "OpUMod"
    if op == "shr":
        return "OpShiftRightArithmetic" if k == "s" else "OpShiftRightLogical"
    return _INT.get(op)


def lower_binary(em, ins) -> None:
    a, b = ins.operands
    t = a.type
    rt = em.types.value(ins.type, ins.span)
    if ins.op in ("min", "max"):
        em.define(ins, em.ext(rt, _MINMAX[(ins.op, _kind(t))], em.val(a), em.val(b)))
        return
    opcode = binary_opcode(ins.op, t)
    if opcode is None:
        raise caps.bad_operand(ins, f"operands of type {t} are not supported")
    em.define(ins, em.op(opcode, rt, em.val(a), em.val(b)))


def lower_unary(em, ins) -> None:
    (a,) = ins.operands
    rt = em.types.value(ins.type, ins.span)
    k = _kind(a.type)
    if ins.op == "neg":
        opcode = "OpFNegate" if k == "f" else "OpSNegate"
    else:
        opcode = "OpLogicalNot" if k == "b" else "OpNot"
    em.define(ins, em.op(opcode, rt, em.val(a)))


_CMP_F = {"eq": "OpFOrdEqual", "ne": "OpFUnordNotEqual", "lt": "OpFOrdLessThan",
          "le": "OpFOrdLessThanEqual", "gt": "OpFOrdGreaterThan",
          "ge": "OpFOrdGreaterThanEqual"}
_CMP_I = {"eq": "OpIEqual", "ne": "OpINotEqual"}
_CMP_ORDER = {"lt": "LessThan", "le": "LessThanEqual", "gt": "GreaterThan",
              "ge": "GreaterThanEqual"}


def lower_cmp(em, ins) -> None:
    a, b = ins.operands
    pred, t = ins.attrs["pred"], a.type
    x, y = em.val(a), em.val(b)
    if isinstance(t, PtrType):
        u64 = em.types.u64()
        x, y = em.op("OpConvertPtrToU", u64, x), em.op("OpConvertPtrToU", u64, y)
        t = IntType(64, False)
    k = _kind(t)
    if k == "f":
        opcode = _CMP_F[pred]
    elif k == "b":
        if pred not in ("eq", "ne"):
            raise caps.bad_operand(ins, f"ordered comparison `{pred}` of bool")
        opcode = "OpLogicalEqual" if pred == "eq" else "OpLogicalNotEqual"
    elif pred in _CMP_I:
        opcode = _CMP_I[pred]
    else:
        opcode = ("OpS" if k == "s" else "OpU") + _CMP_ORDER[pred]
    em.define(ins, em.op(opcode, em.types.bool(), x, y))


def lower_select(em, ins) -> None:
    c, a, b = ins.operands
    em.define(ins, em.op("OpSelect", em.types.value(ins.type, ins.span), em.val(c),
                         em.val(a), em.val(b)))


def convert_value(em, vid: int, src, dst) -> int:
    """Value conversion of id `vid` from IR type `src` to `dst` (see module docstring)."""
    if src == dst:
        return vid
    rt = em.types.value(dst)
    if isinstance(dst, BoolType):
        if isinstance(src, FloatType):
            return em.op("OpFUnordNotEqual", rt, vid, em.const(src, 0.0))
        return em.op("OpINotEqual", rt, vid, em.const(src, 0))
    if isinstance(src, BoolType):
        one, zero = (1.0, 0.0) if isinstance(dst, FloatType) else (1, 0)
        return em.op("OpSelect", rt, vid, em.const(dst, one), em.const(dst, zero))
    if isinstance(src, IntType) and isinstance(dst, IntType):
        if src.bits == dst.bits:
            return vid
        if dst.bits < src.bits:
            return em.op("OpUConvert", rt, vid)
        return em.op("OpSConvert" if src.signed else "OpUConvert", rt, vid)
    if isinstance(src, IntType):
        return em.op("OpConvertSToF" if src.signed else "OpConvertUToF", rt, vid)
    if isinstance(dst, IntType):
        return em.op("OpConvertFToS" if dst.signed else "OpConvertFToU", rt, vid)
    return em.op("OpFConvert", rt, vid)


def lower_convert(em, ins) -> None:
    (a,) = ins.operands
    em.define(ins, convert_value(em, em.val(a), a.type, ins.type))


def lower_bitcast(em, ins) -> None:
    (a,) = ins.operands
    src, dst = em.types.value(a.type, ins.span), em.types.value(ins.type, ins.span)
    if src == dst:
        em.define(ins, em.val(a))
        return
    if isinstance(a.type, BoolType) or isinstance(ins.type, BoolType):
        em.define(ins, convert_value(em, em.val(a), a.type, ins.type))
        return
    em.define(ins, em.op("OpBitcast", dst, em.val(a)))


register({
    **{op: lower_binary for op in ("add", "sub", "mul", "div", "rem", "and", "or", "xor",
                                   "shl", "shr", "min", "max")},
    "neg": lower_unary, "not": lower_unary, "cmp": lower_cmp, "select": lower_select,
    "convert": lower_convert, "bitcast": lower_bitcast,
})
