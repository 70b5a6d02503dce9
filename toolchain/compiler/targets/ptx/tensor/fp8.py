"""Unscaled FP8 (E4M3/E5M2, mixed A/B allowed) tensor operations on PTX `mma.sync`.

Capabilities (checked with ptxas 13.0): `mma.sync.aligned.m16n8k32.row.col.f32.<a>.<b>.f32`
with .e4m3/.e5m2 needs PTX ISA 8.4 and sm_89; the m16n8k16 FP8 form needs PTX ISA 8.7.
A logical tile is an exact grid of m16n8 subtiles (M % 16 == 0, N % 8 == 0, at most
MAX_ACC_REGS resident accumulators per lane); K is covered by m16n8k32 chunks plus, when
K % 32 == 16, one m16n8k16 chunk. Accumulator and result are f32; rounding default,
overflow wrap. Anything else is refused (E0505), a too-old profile with E0504.

`load_decoded` is the exact scalar decode used by replay: one byte through the
architectural packed conversion `cvt.rn.f16x2.e4m3x2`/`e5m2x2` (exact: every E4M3/E5M2
value, NaN and infinity included, is an f16 value), then `cvt.f32.f16` (exact). The byte is
duplicated into both halves so the result does not depend on the pair's half order.
Profiles without that conversion (PTX 7.8 / sm_89) decode with integer arithmetic instead
(`_decode_int`), so FP8 operations replay exactly there (replay.replaces_native) rather
than being refused: E5M2 is the upper byte of the f16 encoding; a normal E4M3 moves to f16
by rebiasing the exponent (+8), a subnormal one is m * 2^-9, 0x7F/0xFF are NaN.
"""
from __future__ import annotations

from ....ir import tensor as T
from .. import ops as I
from .capabilities import refuse
from .frag import A8_K16, A8_K32, B8_K16, B8_K32
from .mma_sync import MAX_ACC_REGS, SUB_M, SUB_N, Form

FP8 = ("e4m3", "e5m2")


def is_fp8(desc: T.TensorDesc) -> bool:
    return desc.a_type in FP8 or desc.b_type in FP8


def form(desc: T.TensorDesc, k: int) -> Form:
    head = (f"mma.sync.aligned.m16n8k{k}.row.col.f32.{desc.a_type}.{desc.b_type}.f32")
    a, b = (A8_K32, B8_K32) if k == 32 else (A8_K16, B8_K16)
    return Form(k, a, b, head, k)


def check(desc: T.TensorDesc, profile, span, matmul: bool) -> None:
    """Refuse what the FP8 mma.sync family cannot execute exactly (on a profile that will
    replay it instead, pass capabilities.ANY_PROFILE: the shape rules still apply)."""
    if desc.a_type not in FP8 or desc.b_type not in FP8:
        raise refuse(desc, f"FP8 MMA needs E4M3/E5M2 for both A and B, found "
                     f"{desc.a_type} and {desc.b_type}", span)
    if (desc.accumulator_type, desc.result_type) != ("f32", "f32"):
        raise refuse(desc, "FP8 MMA accumulates in f32 with an f32 result, not "
                     f"{desc.accumulator_type}/{desc.result_type}", span)
    if desc.sparse or desc.scaled:
        raise refuse(desc, "unscaled FP8 mma.sync is dense; block-scaled FP8 is the "
                     "mxf8f6f4 family", span)
    if desc.rounding != "default" or desc.overflow != "wrap":
        raise refuse(desc, "FP8 MMA has no selectable rounding or saturation", span)
    if desc.math != "multiply_add":
        raise refuse(desc, f"`math: {desc.math}` needs b1 inputs", span)
    if matmul and desc.scope != "subgroup":
        raise refuse(desc, "tensor_matmul regions are subgroup-scoped", span)
    profile.need("mma.fp8.k32", "FP8 E4M3/E5M2 mma.sync m16n8k32", span)
    m, n, k = desc.m, desc.n, desc.k
    if m % SUB_M or n % SUB_N or k % 16 or m * n // 32 > MAX_ACC_REGS:
        raise refuse(desc, f"FP8 tiles are exact grids of m16n8 subtiles with K a multiple "
                     f"of 16 and at most {MAX_ACC_REGS * 32} outputs, found m{m}n{n}k{k}",
                     span)
    if k % 32:
        profile.need("mma.fp8.k16", "FP8 E4M3/E5M2 mma.sync m16n8k16", span)


def tile_forms(desc: T.TensorDesc) -> list[Form]:
    """The unrolled chunk list of a whole tensor_mma tile."""
    forms = [form(desc, 32)] * (desc.k // 32)
    return forms + ([form(desc, 16)] if desc.k % 32 else [])


def load_decoded(em, fmt: str, space: str, addr: str) -> str:
    """One FP8 byte at `addr` as an exact f32 register."""
    if not em.profile.has("cvt.f16x2.fp8"):
        return _decode_int(em, fmt, space, addr)
    byte, pair, lo, hi, out = em.new("rs"), em.new("r"), em.new("rs"), em.new("rs"), \
        em.new("f")
    em.put(I.ld(space, "u8", byte, I.mem(addr)),
           I.binary("mul.lo", "u16", byte, byte, 257),   # the byte in both halves: either
           I.cvt("f16x2", f"{fmt}x2", pair, byte, rounding="rn"),
           I.mov("b32", I.vec(lo, hi), pair), I.cvt("f32", "f16", out, lo))
    return out


def _decode_int(em, fmt: str, space: str, addr: str) -> str:
    """The exact decode without the FP8 conversion instruction (module docstring)."""
    byte, half, out = em.new("rs"), em.new("rs"), em.new("f")
    em.put(I.ld(space, "u8", byte, I.mem(addr)))
    if fmt == "e5m2":
        em.put(I.binary("shl", "b16", half, byte, 8), I.cvt("f32", "f16", out, half))
        return out
    b, mag, h, t = (em.new("r") for _ in range(4))
    em.put(I.cvt("u32", "u16", b, byte), I.binary("and", "b32", mag, b, 127),
           I.binary("shl", "b32", h, mag, 7),            # e << 10 | m << 7
           I.binary("add", "u32", h, h, 8192),           # exponent bias 7 -> 15
           I.binary("and", "b32", t, b, 128), I.binary("shl", "b32", t, t, 8),
           I.binary("or", "b32", h, h, t))               # the sign
    nan, neg, sub = em.new("p"), em.new("p"), em.new("p")
    em.put(I.setp("eq", "u32", nan, mag, 127),
           I.selp("b32", h, 32256, h, nan),              # 0x7E00, an f16 NaN
           I.cvt("u16", "u32", half, h))
    normal, small, scale = em.new("f"), em.new("f"), em.new("f")
    em.put(I.cvt("f32", "f16", normal, half), I.binary("and", "b32", t, b, 7),
           I.cvt("f32", "u32", small, t, rounding="rn"), I.setp("gt", "u32", neg, b, 127),
           I.selp("f32", scale, "0fBB000000", "0f3B000000", neg),     # -+2^-9
           I.binary("mul.rn", "f32", small, small, scale),            # exact (m < 8)
           I.setp("lt", "u32", sub, mag, 8), I.selp("f32", out, small, normal, sub))
    return out
