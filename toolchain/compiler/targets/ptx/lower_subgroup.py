"""Subgroup collectives on the 32-lane warp: activemask, shfl.sync, vote.sync, redux.sync.

Every collective takes its member mask from `activemask.b32`, so a partial final warp is
legal. Reductions and scans guard every tree edge with that mask (the partner lane's bit is
tested before its value is combined), which makes them exact for any contiguous run of
active lanes starting at lane 0, i.e. a uniform partial warp of any size; the reduced value
is then broadcast from the lowest active lane. On PTX >= 7.0 / sm_80, integer reductions use
the hardware `redux.sync`, which is exact for any mask. Shuffle returns the caller's own
value when the source lane is out of range or inactive (the spec's contract), which plain
shfl.sync leaves undefined for inactive lanes. Values are 32-bit (u32/i32/f32).
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Instr
from ...ir.types import FloatType, IntType
from . import ops, regs

FULL = "31"                        # shfl clamp operand: the whole 32-lane segment


def _mask(em, ins: Instr) -> str:
    em.profile.need("subgroup.sync", f"subgroup operation {ins.op}", ins.span)
    m = em.new("r")
    em.op("activemask.b32", m)
    return m


def _check32(ins: Instr, t) -> None:
    if regs.reg_bits(t) != 32:
        raise error("E0505", f"{ins.op} supports 32-bit values (u32/i32/f32), not {t}",
                    ins.span)


def _lane(em) -> str:
    lane = em.block_cache.get("laneid")
    if lane is None:
        lane = em.block_cache["laneid"] = em.new("r")
        em.op("mov.u32", lane, "%laneid")
    return lane


def lower_local_id(em, ins: Instr) -> None:
    em.op("mov.u32", em.result(ins), "%laneid")


def lower_size(em, ins: Instr) -> None:
    """Lanes in this warp: 32, except in a partial final warp of the block, where it is the
    block volume minus the warp's first linear thread id (warps are formed from linear ids).
    Where every launch runs whole warps (a kernel whose declared block volume is a multiple
    of 32, or a helper reachable only from such kernels: emitter.full_subgroups) the answer
    is the immediate 32, so loops striding by it have a constant stride ptxas can unroll."""
    if em.module.full_subgroups(em.fn):
        em.define_imm(ins, "32")
        em.constant_width = True
        return
    r = {k: em.new("r") for k in ("nx", "ny", "nz", "tx", "ty", "tz", "lin", "tot")}
    for k, sreg in (("nx", "%ntid.x"), ("ny", "%ntid.y"), ("nz", "%ntid.z"),
                    ("tx", "%tid.x"), ("ty", "%tid.y"), ("tz", "%tid.z")):
        em.op("mov.u32", r[k], sreg)
    em.op("mad.lo.u32", r["lin"], r["tz"], r["ny"], r["ty"])
    em.op("mad.lo.u32", r["lin"], r["lin"], r["nx"], r["tx"])
    em.op("mul.lo.u32", r["tot"], r["nx"], r["ny"])
    em.op("mul.lo.u32", r["tot"], r["tot"], r["nz"])
    em.op("and.b32", r["lin"], r["lin"], "-32")
    em.op("sub.u32", r["tot"], r["tot"], r["lin"])
    em.op("min.u32", em.result(ins), r["tot"], "32")


def lower_broadcast(em, ins: Instr) -> None:
    value, lane = ins.operands
    _check32(ins, value.type)
    m = _mask(em, ins)
    em.op("shfl.sync.idx.b32", em.result(ins), em.reg(value), em.val(lane), FULL, m)


def lower_shuffle(em, ins: Instr) -> None:
    value, lane = ins.operands
    _check32(ins, value.type)
    m = _mask(em, ins)
    v, src = em.reg(value), em.val(lane)
    got, bit, ok = em.new_t(value.type), em.new("r"), em.new("p")
    em.op("shfl.sync.idx.b32", got, v, src, FULL, m)
    em.op("shr.b32", bit, m, src)                 # a lane >= 32 shifts the mask to 0
    em.op("and.b32", bit, bit, "1")
    em.op("setp.ne.u32", ok, bit, "0")
    em.op(ops.SELP[regs.bits(value.type)], em.result(ins), got, v, ok)


def _combine(op: str, t) -> str:
    if isinstance(t, FloatType):
        return {"add": "add.rn.f32", "min": "min.f32", "max": "max.f32"}[op]
    return "add.u32" if op == "add" else ops.BINARY[op, regs.arith(t)]


def lower_reduce(em, ins: Instr) -> None:
    (value,) = ins.operands
    t, op = value.type, ins.attrs.get("op", "add")
    _check32(ins, t)
    m = _mask(em, ins)
    if isinstance(t, IntType) and em.profile.has("redux.sync"):
        kind = "u32" if op == "add" or not t.signed else "s32"
        em.append(ops.redux_sync(op, kind, em.result(ins), em.reg(value), m))
        return
    lane = _lane(em)
    above = em.new("r")                           # bit k set <=> lane + k is active
    em.op("shr.b32", above, m, lane)
    acc = em.new_t(t)
    em.op("mov.b32", acc, em.reg(value))
    got, bit, ok = em.new_t(t), em.new("r"), em.new("p")
    for off in (16, 8, 4, 2, 1):
        em.op("shfl.sync.down.b32", got, acc, str(off), FULL, m)
        em.op("and.b32", bit, above, str(1 << off))
        em.op("setp.ne.u32", ok, bit, "0")
        em.op(_combine(op, t), acc, acc, got, guard=ok)
    low = em.new("r")                             # lowest active lane holds the total
    em.op("neg.s32", low, m)
    em.op("and.b32", low, low, m)
    em.op("bfind.u32", low, low)
    em.op("shfl.sync.idx.b32", em.result(ins), acc, low, FULL, m)


def lower_scan(em, ins: Instr) -> None:
    (value,) = ins.operands
    t = value.type
    _check32(ins, t)
    if ins.attrs.get("op", "add") != "add":
        raise error("E0505", "subgroup scan supports add only", ins.span)
    m = _mask(em, ins)
    lane, below, shift = _lane(em), em.new("r"), em.new("r")
    em.op("sub.u32", shift, "31", lane)
    em.op("shl.b32", below, m, shift)             # bit 31-k set <=> lane - k is active
    acc = em.new_t(t)
    em.op("mov.b32", acc, em.reg(value))
    got, bit, ok = em.new_t(t), em.new("r"), em.new("p")
    for off in (1, 2, 4, 8, 16):
        em.op("shfl.sync.up.b32", got, acc, str(off), "0", m)
        em.op("and.b32", bit, below, str(1 << (31 - off)))
        em.op("setp.ne.u32", ok, bit, "0")
        em.op(_combine("add", t), acc, acc, got, guard=ok)
    if ins.attrs.get("inclusive", True):
        em.define(ins, acc)
        return
    em.op("shfl.sync.up.b32", got, acc, "1", "0", m)
    em.op("and.b32", bit, below, str(1 << 30))
    em.op("setp.ne.u32", ok, bit, "0")
    em.op(ops.SELP[regs.bits(t)], em.result(ins), got, regs.imm(t, 0), ok)


def lower_ballot(em, ins: Instr) -> None:
    pred, word = ins.operands
    m = _mask(em, ins)
    if isinstance(word, Const) and int(word.value) != 0:
        em.op("mov.u32", em.result(ins), "0")    # words 1..3 are beyond a 32-lane warp
        return
    b = em.new("r")
    em.op("vote.sync.ballot.b32", b, em.reg(pred), m)
    if isinstance(word, Const):
        em.define(ins, b)
        return
    first = em.new("p")
    em.append(ops.setp("eq", regs.arith(word.type), first, em.reg(word), "0"))
    em.op("selp.b32", em.result(ins), b, "0", first)


def lower_vote(em, ins: Instr) -> None:
    m = _mask(em, ins)
    mode = "any" if ins.op == "subgroup.any" else "all"
    em.append(ops.vote_sync(mode, em.result(ins), em.reg(ins.operands[0]), m))


LOWER = {
    "subgroup.local_id": lower_local_id, "subgroup.size": lower_size,
    "subgroup.broadcast": lower_broadcast, "subgroup.shuffle": lower_shuffle,
    "subgroup.reduce": lower_reduce, "subgroup.scan": lower_scan,
    "subgroup.ballot": lower_ballot, "subgroup.any": lower_vote, "subgroup.all": lower_vote,
}
