"""Aggregate (struct and array) values in device code.

The IR moves structs and arrays by value: whole-aggregate `load`/`store`, aggregate
parameters, results and call arguments, aggregate locals and `select`s (struct methods take
`this` by value; a tagged enum is a struct of a tag and a payload). PTX registers hold
scalars only, so an aggregate value lives in an `Agg`: one register per *piece*, a piece
being one scalar field (arrays element by element; %rd, %r or %rs by size, a bool one byte).
Padding is not copied. A tagged enum's payload is an array of words, so a variant's bytes
written through a reinterpreting pointer travel with the value.

- load/store: one ld/st per piece at `[base+offset]` (constant offsets fold as usual),
  or moves from/to registers when the slot is promoted (promote.py);
- parameters, results and call arguments: the PTX ABI's byte-array parameter
  `.param .align A .b8 name[size]` (what nvcc emits for a struct passed by value), read
  and written with ld.param/st.param at each piece's offset;
- locals, `select` and forward references: one mov/selp per piece.
Nothing else in device code takes an aggregate operand (field access goes through
`fieldptr` of the value's slot, an `alloca`: registers when promote.py can keep it there,
else a `.local` array).
"""
from __future__ import annotations

from ...ir.module import Instr, Undef
from ...ir.types import ArrayType, StructType, Type
from . import ops
from .instr import Addr

# piece size -> (register class, PTX type of its moves, PTX type of its memory accesses)
_UNITS = {8: ("rd", "b64", "b64"), 4: ("r", "b32", "b32"), 2: ("rs", "b16", "b16"),
          1: ("rs", "b16", "u8")}


class Agg(tuple):
    """The piece registers of one aggregate value, in offset order."""
    __slots__ = ()


def chunks(t: Type, base: int = 0) -> list[tuple[int, int]]:
    """(byte offset, size) of each scalar field of `t`, arrays element by element."""
    if isinstance(t, StructType):
        return [c for (_, ft), off in zip(t.fields, t.offsets) for c in chunks(ft, base + off)]
    if isinstance(t, ArrayType):
        size = t.elem.size
        return [c for i in range(t.count) for c in chunks(t.elem, base + i * size)]
    return [(base, t.size)] if t.size else []


def new_value(em, t: Type) -> Agg:
    return Agg(em.new(_UNITS[u][0]) for _, u in chunks(t))


def value(em, v) -> Agg:
    """The registers of aggregate value `v` (fresh, unwritten ones for undef)."""
    if isinstance(v, Undef):
        return new_value(em, v.type)
    return em.reg(v)


def copy(em, dst: Agg, src: Agg, t: Type) -> None:
    for d, s, (_, u) in zip(dst, src, chunks(t)):
        if d != s:
            em.append(ops.mov(_UNITS[u][1], d, s))


def load_from(em, t: Type, space: str, addr: Addr) -> Agg:
    out = new_value(em, t)
    for r, (off, u) in zip(out, chunks(t)):
        em.append(ops.ld(space, _UNITS[u][2], r, Addr(addr.base, addr.offset + off)))
    return out


def store_to(em, t: Type, space: str, addr: Addr, v) -> None:
    if isinstance(v, Undef):
        return                                  # any bytes will do
    for r, (off, u) in zip(value(em, v), chunks(t)):
        em.append(ops.st(space, _UNITS[u][2], Addr(addr.base, addr.offset + off), r))


def lower_select(em, ins: Instr) -> None:
    cond, a, b = ins.operands
    p = em.reg(cond)
    out = new_value(em, ins.type)
    for d, x, y, (_, u) in zip(out, value(em, a), value(em, b), chunks(ins.type)):
        em.append(ops.selp(_UNITS[u][1], d, x, y, p))
    em.define(ins, out)


def lower_local_get(em, ins: Instr) -> None:
    src = em.local_reg(ins.operands[0])
    if ins in em.alias_gets:
        em.define(ins, src)
        return
    out = new_value(em, ins.type)
    copy(em, out, src, ins.type)
    em.define(ins, out)


def lower_local_set(em, ins: Instr) -> None:
    loc, v = ins.operands
    if not isinstance(v, Undef):
        copy(em, em.local_reg(loc), value(em, v), loc.type)


