"""Barriers, scoped atomics and asynchronous staging (replayed synchronously).

- gpu.barrier -> OpControlBarrier(Workgroup, Workgroup, semantics) where semantics is the
  exact order bit (Acquire/Release/AcquireRelease/SequentiallyConsistent) OR'd with
  WorkgroupMemory and/or CrossWorkgroupMemory for the barrier's regions.
- Atomics: OpAtomicLoad/Store/IAdd/ISub/UMin/UMax/And/Or/Xor/Exchange/CompareExchange
  with the exact Scope (work_item -> Invocation, subgroup -> Subgroup, workgroup ->
  Workgroup, device -> Device, system -> CrossDevice) and semantics = order bit | the
  memory-class bit of attrs.space (global -> CrossWorkgroupMemory, workgroup ->
  WorkgroupMemory); relaxed is the memory-class bit alone. min/max are unsigned (the IR
  only has u32/u64 atomics). 64-bit atomics declare Int64Atomics (valid for spirv-val only
  under --target-env spv1.0; OpenCL needs cl_khr_int64_base/extended_atomics).
- async.copy -> a synchronous element-by-element copy in order (unrolled up to 16
  constant elements, else a counted loop); async.commit/async.wait emit nothing, which
  keeps the order the async-group contract allows (the copy completed before the wait).
"""
from __future__ import annotations

from ...ir.module import Const
from ...ir.types import IntType
from . import capabilities as caps
from .emit_arith import convert_value
from .emit_function import register
from .emit_memory import element_ptr, load_value, store_value

SCOPE = {"work_item": "Invocation", "subgroup": "Subgroup", "workgroup": "Workgroup",
         "device": "Device", "system": "CrossDevice"}
ORDER = {"relaxed": 0x0, "acquire": 0x2, "release": 0x4, "acq_rel": 0x8, "seq_cst": 0x10}
MEMORY = {"workgroup": 0x100, "global": 0x200}
SCOPE_VALUE = {"CrossDevice": 0, "Device": 1, "Workgroup": 2, "Subgroup": 3,
               "Invocation": 4}
_RMW = {"add": "OpAtomicIAdd", "sub": "OpAtomicISub", "min": "OpAtomicUMin",
        "max": "OpAtomicUMax", "and": "OpAtomicAnd", "or": "OpAtomicOr",
        "xor": "OpAtomicXor", "exchange": "OpAtomicExchange"}
UNROLL_LIMIT = 16


def scope_id(em, scope: str) -> int:
    return em.c_u32(SCOPE_VALUE[SCOPE[scope]])


def semantics_id(em, order: str, space: str) -> int:
    return em.c_u32(ORDER[order] | MEMORY[space])


def lower_barrier(em, ins) -> None:
    bits = ORDER[ins.attrs.get("order", "seq_cst")]
    for region in ins.attrs.get("regions", ("workgroup",)):
        bits |= MEMORY[region]
    wg = em.c_u32(SCOPE_VALUE["Workgroup"])
    em.op("OpControlBarrier", wg, wg, em.c_u32(bits))


def _atomic(em, ins):
    """(pointer id, scope id, semantics id, space); notes Int64Atomics for 64-bit."""
    p = ins.operands[0]
    t = p.type.pointee
    if not isinstance(t, IntType) or t.bits not in (32, 64):
        raise caps.bad_operand(ins, f"atomics need u32/u64 elements, got {t}")
    if t.bits == 64:
        em.m.require_capability("Int64Atomics")
    space = ins.attrs.get("space", "global")
    order = ins.attrs.get("order", "seq_cst")
    return em.val(p), scope_id(em, ins.attrs.get("scope", "device")), \
        semantics_id(em, order, space), space


def lower_atomic_load(em, ins) -> None:
    p, scope, sem, _ = _atomic(em, ins)
    em.define(ins, em.op("OpAtomicLoad", em.types.value(ins.type), p, scope, sem))


def lower_atomic_store(em, ins) -> None:
    p, scope, sem, _ = _atomic(em, ins)
    em.op("OpAtomicStore", p, scope, sem, em.val(ins.operands[1]))


def lower_atomic_rmw(em, ins) -> None:
    p, scope, sem, _ = _atomic(em, ins)
    opcode = _RMW[ins.attrs["op"]]
    em.define(ins, em.op(opcode, em.types.value(ins.type), p, scope, sem,
                         em.val(ins.operands[1])))


def lower_atomic_cmpxchg(em, ins) -> None:
    p, scope, sem, space = _atomic(em, ins)
    fail = semantics_id(em, ins.attrs.get("failure_order", "seq_cst"), space)
    _, expected, desired = ins.operands
    em.define(ins, em.op("OpAtomicCompareExchange", em.types.value(ins.type), p, scope,
                         sem, fail, em.val(desired), em.val(expected)))


def lower_async_copy(em, ins) -> None:
    dst, src, count = ins.operands
    elem = dst.type.pointee
    d, s = em.val(dst), em.val(src)

    def copy_one(index_id: int) -> None:
        v = load_value(em, element_ptr(em, s, src.type, index_id), elem)
        store_value(em, element_ptr(em, d, dst.type, index_id), elem, v)

    if isinstance(count, Const) and int(count.value) <= UNROLL_LIMIT:
        for i in range(int(count.value)):
            copy_one(em.c_u64(i))
        return
    n = convert_value(em, em.val(count), count.type, IntType(64, count.type.signed))
    _counted_loop(em, n, count.type.signed, copy_one)


def _counted_loop(em, n: int, signed: bool, body) -> None:
    """for (i = 0; i < n; ++i) body(i), as free-branching blocks with an OpPhi counter."""
    u64, b = em.types.u64(), em.types.bool()
    pre, head, loop, done = em.cur, em.new_block(), em.new_block(), em.new_block()
    em.op("OpBranch", head.id)
    em.switch(loop)
    i = em.m.new_id()                 # the phi's id, defined in `head` below
    body(i)
    nxt = em.op("OpIAdd", u64, i, em.c_u64(1))
    em.op("OpBranch", head.id)
    latch = em.cur
    em.switch(head)
    head.instructions.append(em.m.encode("OpPhi", (u64, em.c_u64(0), pre.id, nxt, latch.id),
                                         i))
    more = em.op("OpSLessThan" if signed else "OpULessThan", b, i, n)
    em.op("OpBranchConditional", more, loop.id, done.id)
    em.switch(done)


def lower_async_nop(em, ins) -> None:
    del em, ins                       # the copy already completed synchronously


register({
    "gpu.barrier": lower_barrier, "atomic.load": lower_atomic_load,
    "atomic.store": lower_atomic_store, "atomic.rmw": lower_atomic_rmw,
    "atomic.cmpxchg": lower_atomic_cmpxchg, "async.copy": lower_async_copy,
    "async.commit": lower_async_nop, "async.wait": lower_async_nop,
})
