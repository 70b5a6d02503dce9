"""Subgroup collectives for OpenCL (cl_khr_subgroups and the KHR ballot/vote extensions).

- subgroup.local_id / size -> the SubgroupLocalInvocationId / SubgroupSize built-ins (u32).
- broadcast -> OpGroupBroadcast(Subgroup, value, lane) (Groups capability, SPIR-V 1.0).
- reduce/scan -> OpGroupIAdd/FAdd/UMin/SMin/FMin/UMax/SMax/FMax with Reduce,
  InclusiveScan or ExclusiveScan (the exclusive add of lane 0 is 0).
- shuffle: a compile-time-constant source lane becomes a broadcast from
  u_min(lane, size-1), returned only when lane < size (else the caller's own value, the
  contract for an out-of-range source); a varying lane is E0511 because the OpenCL 2.0
  profile has no shuffle instruction.
- ballot -> OpSubgroupBallotKHR (SPV_KHR_shader_ballot) giving a uvec4 mask; word w is
  component w for w < 4 and 0 for w >= 4 (a varying word uses OpVectorExtractDynamic on a
  clamped index plus a select).
- any/all -> OpSubgroupAnyKHR / OpSubgroupAllKHR (SPV_KHR_subgroup_vote).
The `subgroup_ops="core"` profile (emit_spirv keyword) avoids both KHR extensions, for
consumers that cannot read them (PoCL 6's SPIR-V translator rejects
SPV_KHR_shader_ballot): any/all become the SPIR-V 1.0 Groups OpGroupAny/OpGroupAll, and
ballot word w becomes OpGroupIAdd(Reduce) of each lane's bit `1 << (lane & 31)` when its
predicate holds and lane >> 5 == w; lanes own distinct bits, so the sum is the exact OR.
"""
from __future__ import annotations

from ...ir.module import Const
from ...ir.types import FloatType, IntType
from . import capabilities as caps
from .emit_arith import convert_value
from .emit_function import register
from .emit_sync import SCOPE_VALUE

_GROUP = {("add", "i"): "OpGroupIAdd", ("add", "f"): "OpGroupFAdd",
          ("min", "u"): "OpGroupUMin", ("min", "s"): "OpGroupSMin",
          ("min", "f"): "OpGroupFMin", ("max", "u"): "OpGroupUMax",
          ("max", "s"): "OpGroupSMax", ("max", "f"): "OpGroupFMax"}


def _subgroup(em) -> int:
    return em.c_u32(SCOPE_VALUE["Subgroup"])


def _builtin_u32(em, name: str) -> int:
    u32 = em.types.u32()
    return em.op("OpLoad", u32, em.builtin(name, u32))


def lower_local_id(em, ins) -> None:
    em.define(ins, _builtin_u32(em, "SubgroupLocalInvocationId"))


def lower_size(em, ins) -> None:
    em.define(ins, _builtin_u32(em, "SubgroupSize"))


def _check_value(ins, t) -> None:
    if not isinstance(t, (IntType, FloatType)):
        raise caps.bad_operand(ins, f"subgroup values must be numbers, got {t}")


def _lane_u32(em, lane) -> int:
    return convert_value(em, em.val(lane), lane.type, IntType(32, False))


def lower_broadcast(em, ins) -> None:
    value, lane = ins.operands
    _check_value(ins, value.type)
    em.define(ins, em.op("OpGroupBroadcast", em.types.value(ins.type), _subgroup(em),
                         em.val(value), _lane_u32(em, lane)))


def lower_shuffle(em, ins) -> None:
    value, lane = ins.operands
    _check_value(ins, value.type)
    if not isinstance(lane, Const):
        raise caps.varying_shuffle(ins)
    u32, b = em.types.u32(), em.types.bool()
    src = em.c_u32(int(lane.value) & 0xFFFFFFFF)
    size = _builtin_u32(em, "SubgroupSize")
    last = em.op("OpISub", u32, size, em.c_u32(1))
    safe = em.ext(u32, "u_min", src, last)
    got = em.op("OpGroupBroadcast", em.types.value(ins.type), _subgroup(em), em.val(value),
                safe)
    ok = em.op("OpULessThan", b, src, size)
    em.define(ins, em.op("OpSelect", em.types.value(ins.type), ok, got, em.val(value)))


def _kind(t) -> str:
    if isinstance(t, FloatType):
        return "f"
    return "s" if t.signed else "u"


def _collective(em, ins, op: str, mode: str) -> None:
    (value,) = ins.operands
    t = value.type
    _check_value(ins, t)
    k = _kind(t)
    key = (op, "i" if op == "add" and k != "f" else k)
    if key not in _GROUP:
        raise caps.bad_operand(ins, f"subgroup operation `{op}` is not supported")
    em.define(ins, em.op(_GROUP[key], em.types.value(t), _subgroup(em), mode, em.val(value)))


def lower_reduce(em, ins) -> None:
    _collective(em, ins, ins.attrs.get("op", "add"), "Reduce")


def lower_scan(em, ins) -> None:
    mode = "InclusiveScan" if ins.attrs.get("inclusive", True) else "ExclusiveScan"
    _collective(em, ins, ins.attrs.get("op", "add"), mode)


def lower_ballot(em, ins) -> None:
    pred, word = ins.operands
    u32 = em.types.u32()
    if isinstance(word, Const) and not 0 <= int(word.value) < 4:
        em.define(ins, em.c_u32(0))
        return
    if em.ctx.subgroup_ops == "core":
        em.define(ins, _core_ballot(em, em.val(pred), _lane_u32(em, word)))
        return
    v4 = em.m.type_vector(u32, 4)
    mask = em.op("OpSubgroupBallotKHR", v4, em.val(pred))
    if isinstance(word, Const):
        em.define(ins, em.op("OpCompositeExtract", u32, mask, int(word.value)))
        return
    w = _lane_u32(em, word)
    got = em.op("OpVectorExtractDynamic", u32, mask, em.ext(u32, "u_min", w, em.c_u32(3)))
    ok = em.op("OpULessThan", em.types.bool(), w, em.c_u32(4))
    em.define(ins, em.op("OpSelect", u32, ok, got, em.c_u32(0)))


def _core_ballot(em, pred: int, word: int) -> int:
    u32, b = em.types.u32(), em.types.bool()
    lane = _builtin_u32(em, "SubgroupLocalInvocationId")
    bit = em.op("OpShiftLeftLogical", u32, em.c_u32(1),
                em.op("OpBitwiseAnd", u32, lane, em.c_u32(31)))
    mine = em.op("OpIEqual", b, em.op("OpShiftRightLogical", u32, lane, em.c_u32(5)), word)
    keep = em.op("OpLogicalAnd", b, em.op("OpLogicalAnd", b, pred, mine),
                 em.op("OpULessThan", b, word, em.c_u32(4)))
    part = em.op("OpSelect", u32, keep, bit, em.c_u32(0))
    return em.op("OpGroupIAdd", u32, _subgroup(em), "Reduce", part)


def lower_vote(em, ins) -> None:
    anyv = ins.op == "subgroup.any"
    pred = em.val(ins.operands[0])
    if em.ctx.subgroup_ops == "core":
        opcode = "OpGroupAny" if anyv else "OpGroupAll"
        em.define(ins, em.op(opcode, em.types.bool(), _subgroup(em), pred))
        return
    opcode = "OpSubgroupAnyKHR" if anyv else "OpSubgroupAllKHR"
    em.define(ins, em.op(opcode, em.types.bool(), pred))


register({
    "subgroup.local_id": lower_local_id, "subgroup.size": lower_size,
    "subgroup.broadcast": lower_broadcast, "subgroup.shuffle": lower_shuffle,
    "subgroup.reduce": lower_reduce, "subgroup.scan": lower_scan,
    "subgroup.ballot": lower_ballot, "subgroup.any": lower_vote, "subgroup.all": lower_vote,
})
