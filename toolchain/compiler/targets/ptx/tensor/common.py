"""Shared PTX helpers of the tensor lowerings: operand views, 64-bit addressing, lanes.

A `Mat` is one matrix operand as PTX sees it: a 64-bit base register, the IR address space
qualifier, the *stored* layout of the logical matrix (a transpose already folded in, see
TensorDesc.stored_layout), the leading dimension (an int or a u32 register name) and the
element width in bits. All address arithmetic is 64-bit: offsets are built with
`mul.wide.u32`/`mad.wide.u32` from 32-bit coordinates, so row*ld products never wrap.
Nothing here is visible outside targets/ptx/.
"""
from __future__ import annotations

from dataclasses import dataclass

from ....ir import tensor as T
from .. import ops as I
from ..lower_memory import SPACE


@dataclass
class Mat:
    base: str                 # %rd register: address of logical element (0, 0)
    space: str                # "", ".global" or ".shared"
    layout: str               # stored layout of the logical matrix: row | col
    ld: int | str             # leading dimension in elements (int or %r register)
    bits: int                 # bits per element


def operands(ins) -> dict:
    return dict(zip(ins.attrs["roles"], ins.operands))


def mat(em, desc: T.TensorDesc, ops: dict, which: str) -> Mat:
    """The view of operand `which` (a/b/c/d) of a tensor.mma/matmul instruction."""
    v = ops[which]
    fmt = {"a": desc.a_type, "b": desc.b_type, "c": desc.accumulator_type,
           "d": desc.result_type}[which]
    ld = getattr(desc, f"ld{which}")
    if ld is None:
        ld = em.reg(ops[f"ld{which}"]) if f"ld{which}" in ops else T.default_ld(desc, which)
    return Mat(em.reg(v), SPACE[v.type.space], desc.stored_layout(which), ld,
               T.packed_bits(fmt))


def u64(em, v: int | str) -> str:
    """A 64-bit register holding the unsigned 32-bit value or constant `v`."""
    r = em.new("rd")
    if isinstance(v, int):
        em.put(I.mov("u64", r, v))
    else:
        em.put(I.cvt("u64", "u32", r, v))
    return r


def linear(em, terms: list[tuple[int | str, int | str]]) -> int | str:
    """sum(a*b) over `terms` as an exact u64: an int when every factor is constant, else a
    %rd register. Factors are ints or u32 registers."""
    const = sum(a * b for a, b in terms if isinstance(a, int) and isinstance(b, int))
    acc: str | None = None
    for a, b in terms:
        if isinstance(a, int) and isinstance(b, int):
            continue
        if isinstance(a, int):
            a, b = b, a
        if isinstance(b, int) and b == 0:
            continue
        if acc is None:
            acc = em.new("rd")
            em.put(I.binary("mul.wide", "u32", acc, a, b))
        else:
            em.put(I.mad("wide", "u32", acc, a, b, acc))
    if acc is None:
        return const
    if const:
        em.put(I.binary("add", "s64", acc, acc, const))
    return acc


def offset_terms(m: Mat, row: int | str, col: int | str) -> list[tuple]:
    """Element offset of logical (row, col) in `m`, as linear() terms."""
    if m.layout == "row":
        return [(row, m.ld), (col, 1)]
    return [(row, 1), (col, m.ld)]


def scale_bytes(em, elems: int | str, bits: int) -> int | str:
    """Byte offset of `elems` elements of `bits` bits (sub-byte: a whole-byte offset)."""
    if isinstance(elems, int):
        return elems * bits // 8
    r = em.new("rd")
    if bits >= 8:
        shift = (bits // 8).bit_length() - 1
        if 1 << shift == bits // 8:
            em.put(I.binary("shl", "b64", r, elems, shift))
        else:
            em.put(I.binary("mul.lo", "u64", r, elems, bits // 8))
    else:
        em.put(I.binary("shr", "u64", r, elems, (8 // bits).bit_length() - 1))
    return r


def add_addr(em, base: str, byte_off: int | str) -> str:
    if isinstance(byte_off, int) and byte_off == 0:
        return base
    r = em.new("rd")
    em.put(I.binary("add", "s64", r, base, byte_off))
    return r


def elem_addr(em, m: Mat, row: int | str, col: int | str) -> str:
    """%rd address of logical element (row, col) of `m`."""
    return add_addr(em, m.base, scale_bytes(em, linear(em, offset_terms(m, row, col)),
                                            m.bits))


def live_lanes(em) -> tuple[str, str, str]:
    """(activemask, this lane's rank among the live lanes, number of live lanes): the
    cooperative replay distributes work over exactly the lanes that are present."""
    mask, rank, count, below = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    em.put(I.activemask(mask), I.mov("u32", below, "%lanemask_lt"),
           I.binary("and", "b32", below, below, mask), I.popc("b32", rank, below),
           I.popc("b32", count, mask))
    return mask, rank, count


def label(em, stem: str) -> str:
    return em.unique(f"$L__{stem}")
