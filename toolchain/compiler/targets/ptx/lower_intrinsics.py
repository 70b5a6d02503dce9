"""Math, half/bf16, packed-integer, 128-bit vector and debug intrinsics.

math.sqrt -> sqrt.rn; rsqrt -> rsqrt.approx; fabs -> abs; sin/cos -> sin/cos.approx.f32;
log x -> lg2.approx(x) * ln2; exp x -> ex2.approx(x * log2 e) (the multiplies follow the
contraction setting, lower_arith.float_op). h2f/f2h -> cvt.f32.f16 /
cvt.rn.f16.f32 on a .b16 register. bf16 -> f32 is exact bit placement (shl 16) on every
target; f32 -> bf16 is `cvt.rn.bf16.f32` on PTX 7.0/sm_80+, else round-to-nearest-even
integer arithmetic with NaNs mapped to the quiet NaN 0x7FC0. dp4a/dp2a need sm_61;
half2 arithmetic (`add.rn.f16x2` ...) needs sm_53. vec.load4/store4 are one ld/st .v4.
debug.print calls the CUDA runtime's `vprintf(fmt, args)` with a `.local` argument buffer
laid out with C's default promotions (float -> double, narrow ints -> 32 bits).
debug.assert traps on a false condition only when emitting with gpu_checks.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Instr
from ...ir.types import BoolType, F64, FloatType, I32, IntType, U32, Type, align_up
from . import ops as I, regs
from .instr import Addr, Vec, directive, scope
from .lower_arith import convert_into, float_op
from .lower_memory import address, cast_space, local_array, space_of

LN2 = "0f3F317218"
LOG2E = "0f3FB8AA3B"


def _f32_only(ins: Instr) -> None:
    if ins.type != FloatType(32):
        raise error("E0505", f"{ins.op} on {ins.type} has no PTX lowering (f32 only)",
                    ins.span)


_SIMPLE = {"sqrt": "sqrt.rn", "rsqrt": "rsqrt.approx", "fabs": "abs"}
_APPROX = {"sin": "sin.approx", "cos": "cos.approx"}


def lower_math(em, ins: Instr) -> None:
    name, t = ins.op.split(".", 1)[1], ins.type
    a = em.reg(ins.operands[0])
    sfx = regs.arith(t)
    if name in _SIMPLE:
        em.op(I.UNARY[_SIMPLE[name], sfx], em.result(ins), a)
        return
    _f32_only(ins)
    if name in _APPROX:
        em.op(I.UNARY[_APPROX[name], "f32"], em.result(ins), a)
    elif name == "log":
        t2 = em.new("f")
        em.op("lg2.approx.f32", t2, a)
        em.op(float_op(em, "mul", 32), em.result(ins), t2, LN2)
    else:
        t2 = em.new("f")
        em.op(float_op(em, "mul", 32), t2, a, LOG2E)
        em.op("ex2.approx.f32", em.result(ins), t2)


def lower_half(em, ins: Instr) -> None:
    a = em.reg(ins.operands[0])
    if ins.op == "cvt.h2f":
        em.op("cvt.f32.f16", em.result(ins), a)
    elif ins.op == "cvt.f2h":
        em.op("cvt.rn.f16.f32", em.result(ins), a)
    elif ins.op == "cvt.bf2f":
        w = em.new("r")
        em.op("cvt.u32.u16", w, a)
        em.op("shl.b32", w, w, "16")
        em.op("mov.b32", em.result(ins), w)
    elif em.profile.has("cvt.bf16"):
        em.op("cvt.rn.bf16.f32", em.result(ins), a)
    else:
        _f2bf_bits(em, ins, a)


def _f2bf_bits(em, ins: Instr, a: str) -> None:
    bits, lsb, nan = em.new("r"), em.new("r"), em.new("p")
    em.op("mov.b32", bits, a)
    em.op("bfe.u32", lsb, bits, "16", "1")
    em.op("add.u32", lsb, lsb, "32767")           # round half to even
    em.op("add.u32", lsb, bits, lsb)
    em.op("shr.u32", lsb, lsb, "16")
    em.op("setp.nan.f32", nan, a, a)
    em.op("selp.b32", lsb, "32704", lsb, nan)
    em.op("cvt.u16.u32", em.result(ins), lsb)


def _signed_attr(ins: Instr) -> str:
    return "s32" if ins.attrs.get("signed") else "u32"


def lower_dp(em, ins: Instr) -> None:
    em.profile.need("dp4a", ins.op, ins.span)
    a, b, c = (em.reg(o) for o in ins.operands)
    s = _signed_attr(ins)
    part = "" if ins.op == "int.dp4a" else "hi" if ins.attrs.get("hi") else "lo"
    em.append(I.dp(part, s, s, em.result(ins), a, b, c))


def lower_prmt(em, ins: Instr) -> None:
    a, b = em.reg(ins.operands[0]), em.reg(ins.operands[1])
    em.op("prmt.b32", em.result(ins), a, b, em.val(ins.operands[2]))


_HALF2 = {"half2.add": "add.rn", "half2.mul": "mul.rn"}


def lower_half2(em, ins: Instr) -> None:
    em.profile.need("f16x2", ins.op, ins.span)
    ops = [em.reg(o) for o in ins.operands]
    if ins.op == "half2.fma":
        em.append(I.fma("f16x2", em.result(ins), *ops))
    else:
        em.op(I.BINARY[_HALF2[ins.op], "f16x2"], em.result(ins), *ops)


def lower_half2_part(em, ins: Instr) -> None:
    lo, hi = em.new("rs"), em.new("rs")
    em.op("mov.b32", Vec((lo, hi)), em.reg(ins.operands[0]))
    em.op("cvt.f32.f16", em.result(ins), lo if ins.op == "half2.lo" else hi)


def lower_half2_pack(em, ins: Instr) -> None:
    lo, hi = em.new("rs"), em.new("rs")
    em.op("cvt.rn.f16.f32", lo, em.reg(ins.operands[0]))
    em.op("cvt.rn.f16.f32", hi, em.reg(ins.operands[1]))
    em.op("mov.b32", em.result(ins), Vec((lo, hi)))


def _vec4_elem(ins: Instr, p) -> Type:
    t = p.type.pointee
    if regs.reg_bits(t) != 32 or isinstance(t, BoolType):
        raise error("E0505", f"{ins.op} needs 32-bit elements, got {t}", ins.span)
    return t


def lower_vec_load4(em, ins: Instr) -> None:
    src, dst = ins.operands
    t = _vec4_elem(ins, src)
    vals = [em.new_t(t) for _ in range(4)]
    em.op(I.LD[space_of(src), "", 4, regs.exact(t)], Vec(vals), address(em, src))
    d, sp = em.reg(dst), space_of(dst)
    for i, v in enumerate(vals):
        em.effect(I.ST[sp, "", 1, regs.exact(t)], Addr(d, 4 * i), v)


def lower_vec_store4(em, ins: Instr) -> None:
    dst, src = ins.operands
    t = _vec4_elem(ins, dst)
    s, sp = em.reg(src), space_of(src)
    vals = [em.new_t(t) for _ in range(4)]
    for i, v in enumerate(vals):
        em.op(I.LD[sp, "", 1, regs.exact(t)], v, Addr(s, 4 * i))
    em.effect(I.ST[space_of(dst), "", 4, regs.exact(t)], address(em, dst), Vec(vals))


def _promoted(t: Type) -> Type:
    if isinstance(t, FloatType):
        return F64
    if isinstance(t, BoolType) or (isinstance(t, IntType) and t.bits < 32):
        return I32 if isinstance(t, BoolType) or t.signed else U32
    return t


def lower_print(em, ins: Instr) -> None:
    fmt, args = ins.operands[0], ins.operands[1:]
    em.module.uses_vprintf = True
    f = cast_space(em, em.reg(fmt), fmt.type.space, "generic") if fmt.type.is_ptr \
        else em.reg(fmt)
    buf = em.new("rd")
    if args:
        layout, off = [], 0
        for a in args:
            pt = _promoted(a.type)
            off = align_up(off, pt.size)
            layout.append((a, pt, off))
            off += pt.size
        name = local_array(em, align_up(off, 8), 8)
        for a, pt, o in layout:
            r = em.reg(a)
            if pt != a.type:
                r2 = em.new_t(pt)
                convert_into(em, r2, r, a.type, pt)
                r = r2
            em.effect(I.ST[".local", "", 1, regs.exact(pt)], Addr(name, o), r)
        em.op("mov.u64", buf, name)
        em.op("cvta.local.u64", buf, buf)
    else:
        em.op("mov.u64", buf, "0")
    ret = em.new("r")
    em.append(scope("{"))
    em.append(directive(".param .b64 param0"))
    em.effect("st.param.b64", Addr("param0"), f)
    em.append(directive(".param .b64 param1"))
    em.effect("st.param.b64", Addr("param1"), buf)
    em.append(directive(".param .b32 retval0"))
    em.effect("call.uni", "(retval0)", "vprintf", "(param0, param1)")
    em.op("ld.param.b32", ret, Addr("retval0"))
    em.append(scope("}"))


def lower_assert(em, ins: Instr) -> None:
    if not em.gpu_checks:
        return
    cond = ins.operands[0]
    if isinstance(cond.type, BoolType):
        em.effect("trap", guard=em.reg(cond), negated=True)
        return
    bad = em.new("p")
    em.op(I.SETP["eq", regs.arith(cond.type)], bad, em.reg(cond), "0")
    em.effect("trap", guard=bad)


LOWER = {
    **{f"math.{n}": lower_math for n in ("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp")},
    **{op: lower_half for op in ("cvt.h2f", "cvt.f2h", "cvt.bf2f", "cvt.f2bf")},
    "int.dp4a": lower_dp, "int.dp2a": lower_dp, "int.prmt": lower_prmt,
    "half2.add": lower_half2, "half2.mul": lower_half2, "half2.fma": lower_half2,
    "half2.lo": lower_half2_part, "half2.hi": lower_half2_part, "half2.pack": lower_half2_pack,
    "vec.load4": lower_vec_load4, "vec.store4": lower_vec_store4,
    "debug.print": lower_print, "debug.assert": lower_assert,
}
