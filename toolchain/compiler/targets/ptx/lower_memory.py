"""Memory: load/store, address arithmetic, alloca, memcpy, address-space casts.

Every pointer is a 64-bit register (%rd) holding an address of its IR space's PTX window:
global -> .global, workgroup -> .shared, private -> .local, constant -> .const, and generic
-> generic addressing (no space qualifier). Address arithmetic stays 64-bit: `ptradd` of a
sign/zero-extended 32-bit index uses `mul.wide.s32/.u32` on the narrow value (what nvcc
emits; `mul i64 (convert x), C` from opt/index_scale.py is the same pattern), power-of-two
strides use `shl.b64`, and constant offsets (constant-index ptradd, constant byteadd,
fieldptr) fold into the `[reg+imm]` operand of the load or store. Which instructions fold
into their users is decided from the IR's use lists (function._absorbed).
bool is one byte in memory: loaded with ld.u8 then setp, stored via selp and st.u8.
A `vec<N x T>` value is N registers (an `instr.Vec`): loaded with ld.vN, stored with
st.vN; vec.extract/vec.insert only rename registers.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Global, Instr, Undef
from ...ir.types import BoolType, IntType, StructType, Type
from . import lower_aggregate, ops as I, promote, regs
from .instr import Addr, Vec, label
from .lower_arith import alias_or_mov, mutable

SPACE = {"global": ".global", "workgroup": ".shared", "private": ".local", "generic": "",
         "constant": ".const"}
_CVTA = {"global": "global", "workgroup": "shared", "private": "local", "constant": "const"}
_WIDE = {True: "s32", False: "u32"}            # mul.wide's source type by signedness


def space_of(ptr_value) -> str:
    return SPACE[ptr_value.type.space]


def _const_offset(ins) -> int | None:
    """Byte offset that `ins` adds to its first operand when it is a compile-time constant."""
    if not isinstance(ins, Instr):
        return None
    if ins.op == "fieldptr":
        st = ins.operands[0].type.pointee
        return st.offsets[ins.attrs["index"]] if isinstance(st, StructType) else None
    if ins.op in ("ptradd", "byteadd") and isinstance(ins.operands[1], Const):
        scale = max(ins.type.pointee.size, 1) if ins.op == "ptradd" else 1
        return int(ins.operands[1].value) * scale
    if ins.op == "bitcast" and ins.type.is_ptr and ins.operands[0].type.is_ptr:
        return 0                               # a vector view of the same address
    return None


def address(em, p) -> Addr:
    """`[reg]` or `[reg+imm]` for pointer `p`, folding constant offsets into the operand."""
    offset = 0
    while True:
        off = _const_offset(p)
        base = p.operands[0] if off is not None else None
        if off is None or mutable(em, base) or isinstance(base, (Const, Global)):
            break
        offset += off
        p = base
    if isinstance(p, Global) and p.space != "generic":
        r = em.module.symbol_name(p)
    else:
        r = em.reg(p)
    return Addr(r, offset)


def _check_scalar(t: Type, ins: Instr) -> None:
    if not t.is_scalar:
        raise error("E0505", f"{ins.op} of aggregate type {str(t).lstrip('%')} is not "
                    "supported in device code; access its fields", ins.span)


def load_into(em, d: str, t: Type, space: str, addr: Addr, cache: str = "") -> None:
    if isinstance(t, BoolType):
        tmp = em.new("rs")
        em.op(I.LD[space, cache, 1, "u8"], tmp, addr)
        em.op("setp.ne.u16", d, tmp, "0")
    else:
        em.op(I.LD[space, cache, 1, regs.exact(t)], d, addr)


def store_from(em, t: Type, space: str, addr: Addr, value, cache: str = "") -> None:
    if isinstance(t, BoolType):
        tmp = em.new("rs")
        em.op("selp.u16", tmp, "1", "0", em.reg(value))
        em.effect(I.ST[space, cache, 1, "u8"], addr, tmp)
    else:
        em.effect(I.ST[space, cache, 1, regs.exact(t)], addr, em.val(value))


def _space_and_hint(em, p, ins: Instr) -> tuple[str, str]:
    """The state space and opt/reread.py's cache priority: `.global.L1::evict_last` for a
    global load a later loop reads again (keep its lines in L1), `.global.cs` (evict-first
    in L1 and L2) for a row's last read and for a store no loop of the kernel reads back."""
    space = space_of(p)
    if space != ".global" or not ins.attrs:
        return space, ""
    if ins.attrs.get("reread") and em.profile.has("L1::evict_last"):
        return space, "L1::evict_last"
    return space, "cs" if ins.attrs.get("last_read") or ins.attrs.get("stream") else ""


def lower_load(em, ins: Instr) -> None:
    if ins in em.slots.access:
        promote.load(em, ins)
        return
    p = ins.operands[0]
    space, cache = _space_and_hint(em, p, ins)
    if ins.type.is_vector:
        t = ins.type
        vals = Vec([em.new_t(t.elem) for _ in range(t.count)])
        em.op(I.LD[space, cache, t.count, regs.exact(t.elem)], vals, address(em, p))
        em.define(ins, vals)
        return
    if ins.type.is_aggregate:
        em.define(ins, lower_aggregate.load_from(em, ins.type, space_of(p), address(em, p)))
        return
    _check_scalar(ins.type, ins)
    load_into(em, em.result(ins), ins.type, space, address(em, p), cache)


def lower_store(em, ins: Instr) -> None:
    if ins in em.slots.access:
        promote.store(em, ins)
        return
    p, v = ins.operands
    space, cache = _space_and_hint(em, p, ins)
    if v.type.is_vector:
        em.effect(I.ST[space, cache, v.type.count, regs.exact(v.type.elem)], address(em, p),
                  _vector(em, v))
        return
    if v.type.is_aggregate:
        lower_aggregate.store_to(em, v.type, space_of(p), address(em, p), v)
        return
    _check_scalar(v.type, ins)
    store_from(em, v.type, space, address(em, p), v, cache)


def _vector(em, v) -> Vec:
    """The element registers of a vector value (fresh ones for undef)."""
    if isinstance(v, Undef):
        return Vec([em.new_t(v.type.elem) for _ in range(v.type.count)])
    return em.reg(v)


def lower_vec_extract(em, ins: Instr) -> None:
    """An element of a vector is its register: no instruction."""
    em.define(ins, _vector(em, ins.operands[0]).regs[ins.attrs["index"]])


def lower_vec_insert(em, ins: Instr) -> None:
    vec, value = ins.operands
    elems = list(_vector(em, vec).regs)
    r = em.reg(value)
    if mutable(em, value):                     # a local's register may change later
        r = em.new_t(value.type)
        em.op(I.MOV[regs.bits(value.type)], r, em.reg(value))
    elems[ins.attrs["index"]] = r
    em.define(ins, Vec(elems))


def wide_source(em, index, size: int):
    """The 32-bit value behind an i64 `index` that mul.wide can scale directly, or None."""
    if size > 1 and isinstance(index, Instr) and index.op == "convert":
        src = index.operands[0]
        if isinstance(src.type, IntType) and src.type.bits == 32 and not mutable(em, src) \
                and not isinstance(src, Const):
            return src
    return None


def wide_factor(ins: Instr):
    """(convert, factor) when `ins` is `mul i64 (convert i32 -> i64 x), C` and C fits x's
    32-bit signedness, so `mul.wide` of x by C computes it exactly (the product of two
    32-bit values fits in 64 bits); else None. index-scale writes such muls."""
    if ins.op != "mul" or not isinstance(ins.type, IntType) or ins.type.bits != 64:
        return None
    a, b = ins.operands
    if isinstance(a, Const):
        a, b = b, a
    if not (isinstance(b, Const) and isinstance(a, Instr) and a.op == "convert"):
        return None
    src = a.operands[0]
    if not isinstance(src.type, IntType) or src.type.bits != 32 or isinstance(src, Const):
        return None
    lo, hi = (-(1 << 31), 1 << 31) if src.type.signed else (0, 1 << 32)
    c = int(b.value)
    return (a, c) if lo <= c < hi else None


def pow2_factor(ins: Instr) -> int | None:
    """k when `ins` is `mul i64 x, 2**k` (k >= 1) with a non-constant x, else None."""
    if ins.op != "mul" or not isinstance(ins.type, IntType) or ins.type.bits != 64:
        return None
    a, b = ins.operands
    if isinstance(a, Const):
        a, b = b, a
    if not isinstance(b, Const) or isinstance(a, Const):
        return None
    c = int(b.value) & ((1 << 64) - 1)
    return c.bit_length() - 1 if c > 1 and c & (c - 1) == 0 else None


def lower_mul_wide(em, ins: Instr) -> None:
    """The isel pattern for `wide_factor` muls (function.FnEmitter picks it)."""
    conv, c = wide_factor(ins)
    src = conv.operands[0]
    em.op(I.BINARY["mul.wide", _WIDE[src.type.signed]], em.result(ins), em.reg(src), str(c))


def lower_mul_pow2(em, ins: Instr) -> None:
    """`mul i64 x, 2**k` -> shl.b64 (ptxas gives a 64-bit multiply more registers)."""
    a = ins.operands[0] if not isinstance(ins.operands[0], Const) else ins.operands[1]
    em.op("shl.b64", em.result(ins), em.reg(a), str(pow2_factor(ins)))


def scaled_index(em, index, size: int) -> str:
    """64-bit byte offset `index * size` for an i64 index (mul.wide on a widened i32).
    Offsets shared by several addresses are one IR value under -O (opt/index_scale.py)."""
    src = wide_source(em, index, size)
    if src is not None:
        t = em.new("rd")
        em.op(I.BINARY["mul.wide", _WIDE[src.type.signed]], t, em.reg(src), str(size))
        return t
    if size == 1:
        return em.reg(index)
    r, t = em.reg(index), em.new("rd")
    if size & (size - 1) == 0:
        em.op("shl.b64", t, r, str(size.bit_length() - 1))
    else:
        em.op("mul.lo.s64", t, r, str(size))
    return t


def _add_offset(em, ins: Instr, base, offset: int) -> None:
    if offset == 0:
        alias_or_mov(em, ins, base)
        return
    em.op("add.s64", em.result(ins), em.reg(base), str(offset))


def lower_ptradd(em, ins: Instr) -> None:
    p, index = ins.operands
    size = max(p.type.pointee.size, 1)
    if isinstance(index, Const):
        _add_offset(em, ins, p, int(index.value) * size)
        return
    off = scaled_index(em, index, size)
    em.op("add.s64", em.result(ins), em.reg(p), off)


def lower_byteadd(em, ins: Instr) -> None:
    p, off = ins.operands
    if isinstance(off, Const):
        _add_offset(em, ins, p, int(off.value))
        return
    em.op("add.s64", em.result(ins), em.reg(p), em.reg(off))


def lower_fieldptr(em, ins: Instr) -> None:
    p = ins.operands[0]
    _add_offset(em, ins, p, p.type.pointee.offsets[ins.attrs["index"]])


def local_array(em, size: int, align: int) -> str:
    """A function-scope `.local` byte array; returns its name."""
    name = em.unique("__local_depot")
    em.decls.append(f"\t.local .align {align} .b8 \t{name}[{max(size, 1)}];")
    return name


def lower_alloca(em, ins: Instr) -> None:
    t = ins.attrs["type"]
    name = local_array(em, t.size, max(t.align, 4))
    em.op("mov.u64", em.result(ins), name)


def _memcpy_unit(dst, src, size: int) -> int:
    align = min(dst.type.pointee.align, src.type.pointee.align, 8)
    for unit in (8, 4, 2, 1):
        if unit <= align and size % unit == 0:
            return unit
    return 1


def lower_memcpy(em, ins: Instr) -> None:
    dst, src = ins.operands
    size = int(ins.attrs["size"])
    unit = _memcpy_unit(dst, src, size)
    cls, ty = {8: ("rd", "b64"), 4: ("r", "b32"), 2: ("rs", "b16"), 1: ("rs", "u8")}[unit]
    ds, ss = space_of(dst), space_of(src)
    d, s = em.reg(dst), em.reg(src)
    if size // unit <= 64:
        for off in range(0, size, unit):
            t = em.new(cls)
            em.op(I.LD[ss, "", 1, ty], t, Addr(s, off))
            em.effect(I.ST[ds, "", 1, ty], Addr(d, off), t)
        return
    i, pd, ps, t, p = em.new("rd"), em.new("rd"), em.new("rd"), em.new(cls), em.new("p")
    loop = em.unique("$L__memcpy")
    em.op("mov.u64", i, "0")
    em.append(label(loop))
    em.op("add.s64", ps, s, i)
    em.op("add.s64", pd, d, i)
    em.op(I.LD[ss, "", 1, ty], t, Addr(ps))
    em.effect(I.ST[ds, "", 1, ty], Addr(pd), t)
    em.op("add.s64", i, i, str(unit))
    em.op("setp.lt.u64", p, i, str(size))
    em.effect("bra", loop, guard=p)


def cast_space(em, r: str, src: str, dst: str) -> str:
    """Convert address register `r` from IR space `src` to `dst`; returns the register."""
    if src == dst:
        return r
    if src != "generic":
        g = em.new("rd")
        em.append(I.cvta(_CVTA[src], g, r))
        r = g
    if dst != "generic":
        out = em.new("rd")
        em.append(I.cvta(_CVTA[dst], out, r, to=True))
        r = out
    return r


def lower_addrspacecast(em, ins: Instr) -> None:
    (a,) = ins.operands
    em.define(ins, cast_space(em, em.reg(a), a.type.space, ins.type.space))


LOWER = {
    "load": lower_load, "store": lower_store, "ptradd": lower_ptradd,
    "byteadd": lower_byteadd, "fieldptr": lower_fieldptr, "alloca": lower_alloca,
    "memcpy": lower_memcpy, "addrspacecast": lower_addrspacecast,
    "vec.extract": lower_vec_extract, "vec.insert": lower_vec_insert,
}
