"""GPU geometry, storage, barriers, scoped atomics and asynchronous staging.

- gpu.index -> mov from %tid/%ctaid/%ntid/%nctaid.
- gpu.alloc workgroup -> a module-scope `.shared .align >=32` array (compiler-owned shared
  storage is 32-byte aligned for 16-byte cp.async and tensor tiles); private -> `.local`.
- gpu.dynamic_shared -> one module-scope `.extern .shared .align 16 .b8 <fn>_dyn[]` per
  function that uses it; every view of a kernel aliases that base.
- gpu.barrier -> `bar.sync 0` for every region/order: bar.sync already orders all of the
  CTA's memory accesses (shared and global) at CTA scope, which is exactly the workgroup
  scope a barrier promises; acquire/release-only forms are deliberately strengthened.
- Atomics follow NVIDIA's C++ -> PTX mapping (libcu++): relaxed/acquire/release/acq_rel are
  `.sem` qualifiers; seq_cst is `fence.sc.<scope>` followed by the acquire form (loads,
  RMW, CAS) or the relaxed form (stores). Scopes: work_item/subgroup/workgroup -> .cta (PTX
  has no narrower scope than the CTA, so .cta is the closest legal one), device -> .gpu,
  system -> .sys. Scoped atomics need PTX 6.0 and sm_70 (E0504 otherwise).
  RMW sub is an add of the two's-complement negation; min/max are unsigned (.u32/.u64).
- async.copy -> cp.async.{ca,cg}.shared.global (cg only for 16-byte transactions) with
  commit_group/wait_group on PTX >= 7.0 and sm_80+; elsewhere every element is copied
  synchronously with ld.global/st.shared in order and commit/wait emit nothing, which
  preserves the observable order the async-group contract allows.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Instr
from ...ir.types import IntType
from . import ops as I, regs
from .instr import Addr
from .lower_memory import address, cast_space, local_array

INDEX_REG = {"thread": "%tid", "block": "%ctaid", "block_dim": "%ntid", "grid_dim": "%nctaid"}
SCOPE = {"work_item": "cta", "subgroup": "cta", "workgroup": "cta", "device": "gpu",
         "system": "sys"}
ATOM_SPACE = {"global": "global", "workgroup": "shared"}
WORKGROUP_ALIGN = 32


def lower_index(em, ins: Instr) -> None:
    reg = INDEX_REG[ins.attrs["kind"]]
    em.op("mov.u32", em.result(ins), f"{reg}.{ins.attrs['axis']}")


TMA_ALIGN = 128


def lower_alloc(em, ins: Instr) -> None:
    elem, count = ins.attrs["elem"], int(ins.attrs["count"])
    size = elem.size * count
    if ins.attrs["space"] == "workgroup":
        align = max(WORKGROUP_ALIGN, elem.align, ins.attrs.get("align", 0))
        if any(i.op == "tensor.transfer" for i in em.fn.instructions()):
            align = max(align, TMA_ALIGN)      # a possible bulk-tensor copy's shared side
        name = em.module.shared_array(em.fn, ins.attrs.get("name") or "wg", size, align)
    else:
        name = local_array(em, size, max(elem.align, 16))
    em.op("mov.u64", em.result(ins), name)


def lower_dynamic_shared(em, ins: Instr) -> None:
    em.op("mov.u64", em.result(ins),
          em.module.dynamic_shared(em.fn, int(ins.attrs.get("align", 16))))


def lower_barrier(em, ins: Instr) -> None:
    em.effect("bar.sync", "0")


# ---- atomics -------------------------------------------------------------------------
def _atomic_target(em, ins: Instr) -> tuple[Addr, str, str]:
    """(address operand, `.scope`, `.space`) for an atomic on operand 0."""
    em.profile.need("atom.scoped", f"scoped atomic {ins.op}", ins.span)
    p = ins.operands[0]
    space = ins.attrs.get("space", "global")
    if p.type.space == space:
        addr = address(em, p)
    else:
        addr = Addr(cast_space(em, em.reg(p), p.type.space, space))
    return addr, SCOPE[ins.attrs.get("scope", "device")], ATOM_SPACE[space]


def _order(em, order: str, scope: str, seq_cst_as: str) -> str:
    """The `.sem` qualifier for `order`, emitting the leading fence.sc for seq_cst."""
    if order == "seq_cst":
        em.append(I.fence("sc", scope))
        return seq_cst_as
    return order


def lower_atomic_load(em, ins: Instr) -> None:
    addr, scope, space = _atomic_target(em, ins)
    sem = _order(em, ins.attrs.get("order", "seq_cst"), scope, "acquire")
    em.append(I.ld_ordered(sem, scope, space, regs.exact(ins.type), em.result(ins), addr))


def lower_atomic_store(em, ins: Instr) -> None:
    addr, scope, space = _atomic_target(em, ins)
    value = ins.operands[1]
    sem = _order(em, ins.attrs.get("order", "seq_cst"), scope, "relaxed")
    em.append(I.st_ordered(sem, scope, space, regs.exact(value.type), addr, em.val(value)))


RMW = {"add": ("add", "u"), "sub": ("add", "u"), "min": ("min", "u"), "max": ("max", "u"),
       "and": ("and", "b"), "or": ("or", "b"), "xor": ("xor", "b"), "exchange": ("exch", "b")}


def lower_atomic_rmw(em, ins: Instr) -> None:
    addr, scope, space = _atomic_target(em, ins)
    op, value = ins.attrs["op"], ins.operands[1]
    t: IntType = ins.type
    operand = em.val(value)
    if op == "sub" and isinstance(value, Const):
        operand = regs.imm(t, -int(value.value))
    elif op == "sub":
        neg = em.new_t(t)
        em.op(I.UNARY["neg", f"s{t.bits}"], neg, em.reg(value))
        operand = neg
    name, kind = RMW[op]
    sem = _order(em, ins.attrs.get("order", "seq_cst"), scope, "acquire")
    em.append(I.atom(sem, scope, space, name, f"{kind}{t.bits}", em.result(ins), addr,
                     operand))


_STRENGTH = {"relaxed": 0, "acquire": 1, "release": 1, "acq_rel": 2, "seq_cst": 3}


def _cas_order(success: str, failure: str) -> str:
    if success == "release" and failure == "acquire":
        return "acq_rel"
    return success if _STRENGTH[success] >= _STRENGTH[failure] else failure


def lower_atomic_cmpxchg(em, ins: Instr) -> None:
    addr, scope, space = _atomic_target(em, ins)
    _, expected, desired = ins.operands
    order = _cas_order(ins.attrs.get("order", "seq_cst"),
                       ins.attrs.get("failure_order", "seq_cst"))
    sem = _order(em, order, scope, "acquire")
    em.append(I.atom(sem, scope, space, "cas", f"b{ins.type.bits}", em.result(ins), addr,
                     em.val(expected), em.val(desired)))


# ---- asynchronous staging ------------------------------------------------------------
def native_async(em) -> bool:
    return em.profile.has("cp.async")


def lower_async_copy(em, ins: Instr) -> None:
    dst, src, count = ins.operands
    elem = dst.type.pointee
    if not isinstance(count, Const):
        raise error("E0505", "async.copy needs a constant element count in PTX", ins.span)
    total = int(count.value) * elem.size
    step = int(ins.attrs["transaction"])
    if total % step:
        raise error("E0505", f"async.copy of {total} bytes is not a multiple of its "
                    f"{step}-byte transaction", ins.span)
    d = cast_space(em, em.reg(dst), dst.type.space, "workgroup")
    s = cast_space(em, em.reg(src), src.type.space, "global")
    if native_async(em):
        cache = "cg" if step == 16 and ins.attrs.get("cache") == "global" else "ca"
        for off in range(0, total, step):
            em.append(I.cp_async(cache, Addr(d, off), Addr(s, off), str(step)))
        return
    for off in range(0, total, elem.size):              # synchronous replay, in order
        t = em.new_t(elem)
        em.op(I.LD[".global", "", 1, regs.exact(elem)], t, Addr(s, off))
        em.effect(I.ST[".shared", "", 1, regs.exact(elem)], Addr(d, off), t)


def lower_async_commit(em, ins: Instr) -> None:
    if native_async(em):
        em.effect("cp.async.commit_group")


def lower_async_wait(em, ins: Instr) -> None:
    if native_async(em):
        em.effect("cp.async.wait_group", str(int(ins.attrs['pending'])))


LOWER = {
    "gpu.index": lower_index, "gpu.alloc": lower_alloc,
    "gpu.dynamic_shared": lower_dynamic_shared, "gpu.barrier": lower_barrier,
    "atomic.load": lower_atomic_load, "atomic.store": lower_atomic_store,
    "atomic.rmw": lower_atomic_rmw, "atomic.cmpxchg": lower_atomic_cmpxchg,
    "async.copy": lower_async_copy, "async.commit": lower_async_commit,
    "async.wait": lower_async_wait,
}
