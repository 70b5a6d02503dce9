"""Math, half/bf16 conversions, packed-integer and packed-half intrinsics, debug ops.

- math.sqrt/rsqrt/fabs/sin/cos/log/exp -> OpExtInst OpenCL.std of the same name.
- cvt.h2f / cvt.f2h use OpenCL.std vload_half / vstore_half on a Function-storage ushort
  temporary (no Float16 capability; vstore_half rounds to nearest even).
- bf16 is integer bit arithmetic: bf2f places the bits high (<< 16); f2bf rounds to
  nearest even ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) and maps NaN to 0x7FC0.
- int.dp4a / int.dp2a / int.prmt are exact integer emulations of the PTX instructions
  (dp2a: the 16-bit halves of `a` times bytes 0-1 (lo) or 2-3 (hi) of `b`, plus c).
- half2.*: halves unpacked with vload_half; add/mul computed in f32 (exact product /
  double rounding harmless at 24 >= 2*11+2 bits); fma computed in f64 (exact product, one
  rounding) and stored with vstore_half from double, so it declares Float64.
- debug.print -> E0512, debug.assert -> E0513 (capabilities.py).
"""
from __future__ import annotations

from ...ir.types import F64, FloatType
from . import capabilities as caps
from .emit_function import register

_MATH = ("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp")


def lower_math(em, ins) -> None:
    if not isinstance(ins.type, FloatType):
        raise caps.bad_operand(ins, f"math on {ins.type}")
    name = ins.op.split(".", 1)[1]
    em.define(ins, em.ext(em.types.value(ins.type), name, em.val(ins.operands[0])))


# ---- half <-> float through vload_half / vstore_half ---------------------------------
def _half_tmp(em) -> int:
    if getattr(em, "_half_tmp", None) is None:
        em._half_tmp = em.temp_var(em.types.int(16))
    return em._half_tmp


def _half_ptr(em, tmp: int) -> int:
    """The ushort temporary viewed as `half*`, the pointer vload_half/vstore_half take.

    A 16-bit OpTypeFloat used only as a pointee needs Float16Buffer (part of every OpenCL
    2.0 device), not Float16 (half arithmetic), which the writer's type_float(16) would
    declare; so the type is made directly."""
    em.m.require_capability("Float16Buffer")
    half = em.m._unique("OpTypeFloat", 16)
    return em.op("OpBitcast", em.m.type_pointer("Function", half), tmp)


def h2f(em, bits16: int) -> int:
    tmp = _half_tmp(em)
    em.op("OpStore", tmp, bits16, "Aligned", 2)
    return em.ext(em.types.f32(), "vload_half", em.c_u64(0), _half_ptr(em, tmp))


def f2h(em, value: int) -> int:
    """f32 (or f64) id -> u16 half bits, rounded to nearest even."""
    tmp = _half_tmp(em)
    em.ext(em.types.void(), "vstore_half", value, em.c_u64(0), _half_ptr(em, tmp))
    return em.op("OpLoad", em.types.int(16), tmp, "Aligned", 2)


def lower_cvt(em, ins) -> None:
    a = em.val(ins.operands[0])
    u32, u16 = em.types.u32(), em.types.int(16)
    if ins.op == "cvt.h2f":
        em.define(ins, h2f(em, a))
    elif ins.op == "cvt.f2h":
        em.define(ins, f2h(em, a))
    elif ins.op == "cvt.bf2f":
        wide = em.op("OpUConvert", u32, a)
        em.define(ins, em.op("OpBitcast", em.types.f32(),
                             em.op("OpShiftLeftLogical", u32, wide, em.c_u32(16))))
    else:
        b = em.op("OpBitcast", u32, a)
        lsb = em.op("OpBitwiseAnd", u32, em.op("OpShiftRightLogical", u32, b, em.c_u32(16)),
                    em.c_u32(1))
        bias = em.op("OpIAdd", u32, lsb, em.c_u32(0x7FFF))
        rounded = em.op("OpShiftRightLogical", u32, em.op("OpIAdd", u32, b, bias),
                        em.c_u32(16))
        nan = em.op("OpIsNan", em.types.bool(), a)
        picked = em.op("OpSelect", u32, nan, em.c_u32(0x7FC0), rounded)
        em.define(ins, em.op("OpUConvert", u16, picked))


# ---- packed integer dot products and byte permute --------------------------------------
def _field(em, x: int, shift: int, bits: int, signed: bool) -> int:
    """Bits [shift, shift+bits) of u32 id `x`, sign- or zero-extended to 32 bits."""
    u32 = em.types.u32()
    if signed:
        up = em.op("OpShiftLeftLogical", u32, x, em.c_u32(32 - shift - bits))
        return em.op("OpShiftRightArithmetic", u32, up, em.c_u32(32 - bits))
    down = em.op("OpShiftRightLogical", u32, x, em.c_u32(shift)) if shift else x
    return em.op("OpBitwiseAnd", u32, down, em.c_u32((1 << bits) - 1))


def lower_dp(em, ins) -> None:
    a, b, c = (em.val(o) for o in ins.operands)
    u32, signed = em.types.u32(), bool(ins.attrs.get("signed"))
    if ins.op == "int.dp4a":
        pairs = [((8 * i, 8), (8 * i, 8)) for i in range(4)]
    else:
        base = 16 if ins.attrs.get("hi") else 0
        pairs = [((16 * i, 16), (base + 8 * i, 8)) for i in range(2)]
    acc = c
    for (sa, wa), (sb, wb) in pairs:
        prod = em.op("OpIMul", u32, _field(em, a, sa, wa, signed),
                     _field(em, b, sb, wb, signed))
        acc = em.op("OpIAdd", u32, acc, prod)
    em.define(ins, acc)


def lower_prmt(em, ins) -> None:
    """prmt.b32 default mode: result byte k = byte (sel_k & 7) of {b, a}; when sel_k & 8
    is set the byte becomes its sign bit replicated (0x00 or 0xFF)."""
    a, b, sel = (em.val(o) for o in ins.operands)
    u32, u64 = em.types.u32(), em.types.u64()
    both = em.op("OpBitwiseOr", u64, em.op("OpUConvert", u64, a), em.op(
        "OpShiftLeftLogical", u64, em.op("OpUConvert", u64, b), em.c_u64(32)))
    out = em.c_u32(0)
    for k in range(4):
        nib = _field(em, sel, 4 * k, 4, False)
        idx = em.op("OpBitwiseAnd", u32, nib, em.c_u32(7))
        shift = em.op("OpUConvert", u64, em.op("OpIMul", u32, idx, em.c_u32(8)))
        byte = em.op("OpUConvert", u32, em.op("OpShiftRightLogical", u64, both, shift))
        byte = em.op("OpBitwiseAnd", u32, byte, em.c_u32(0xFF))
        sign = em.op("OpIMul", u32, em.op("OpShiftRightLogical", u32, byte, em.c_u32(7)),
                     em.c_u32(0xFF))
        rep = em.op("OpINotEqual", em.types.bool(),
                    em.op("OpBitwiseAnd", u32, nib, em.c_u32(8)), em.c_u32(0))
        byte = em.op("OpSelect", u32, rep, sign, byte)
        placed = em.op("OpShiftLeftLogical", u32, byte, em.c_u32(8 * k)) if k else byte
        out = em.op("OpBitwiseOr", u32, out, placed)
    em.define(ins, out)


# ---- packed halves ------------------------------------------------------------------
def _unpack(em, packed: int, hi: bool) -> int:
    u32 = em.types.u32()
    part = em.op("OpShiftRightLogical", u32, packed, em.c_u32(16)) if hi else packed
    return h2f(em, em.op("OpUConvert", em.types.int(16), part))


def _pack(em, lo16: int, hi16: int) -> int:
    u32 = em.types.u32()
    hi = em.op("OpShiftLeftLogical", u32, em.op("OpUConvert", u32, hi16), em.c_u32(16))
    return em.op("OpBitwiseOr", u32, em.op("OpUConvert", u32, lo16), hi)


def lower_half2_arith(em, ins) -> None:
    ops = [em.val(o) for o in ins.operands]
    f32, f64 = em.types.f32(), em.types.value(F64)
    halves = []
    for hi in (False, True):
        xs = [_unpack(em, p, hi) for p in ops]
        if ins.op == "half2.add":
            r = em.op("OpFAdd", f32, *xs)
        elif ins.op == "half2.mul":
            r = em.op("OpFMul", f32, *xs)
        else:
            x, y, z = (em.op("OpFConvert", f64, v) for v in xs)
            r = em.op("OpFAdd", f64, em.op("OpFMul", f64, x, y), z)
        halves.append(f2h(em, r))
    em.define(ins, _pack(em, *halves))


def lower_half2_part(em, ins) -> None:
    em.define(ins, _unpack(em, em.val(ins.operands[0]), ins.op == "half2.hi"))


def lower_half2_pack(em, ins) -> None:
    lo, hi = (f2h(em, em.val(o)) for o in ins.operands)
    em.define(ins, _pack(em, lo, hi))


def lower_debug(em, ins) -> None:
    raise caps.debug_print(ins) if ins.op == "debug.print" else caps.debug_assert(ins)


register({
    **{f"math.{n}": lower_math for n in _MATH},
    **{op: lower_cvt for op in ("cvt.h2f", "cvt.f2h", "cvt.bf2f", "cvt.f2bf")},
    "int.dp4a": lower_dp, "int.dp2a": lower_dp, "int.prmt": lower_prmt,
    "half2.add": lower_half2_arith, "half2.mul": lower_half2_arith,
    "half2.fma": lower_half2_arith, "half2.lo": lower_half2_part,
    "half2.hi": lower_half2_part, "half2.pack": lower_half2_pack,
    "debug.print": lower_debug, "debug.assert": lower_debug,
})
