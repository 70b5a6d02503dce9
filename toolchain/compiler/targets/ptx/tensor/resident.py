"""Resident tensor accumulators: the PTX half of the optimizer's tensor chains and K loops.

The shared optimizer (opt/tensor_residency.py) marks a group of connected `tensor.mma`
updates with `attrs["residency"] = (group, "update")`, puts one `tensor.acc_begin` (reads
C) before the first update and one `tensor.acc_commit` (writes D) on every path out of the
group. Here PTX decides, once per group at the begin, between:

- resident: C's fragments are loaded once into a group-owned register tuple, every update
  loads only its A and B fragments and accumulates into that tuple, the commit stores D once;
- replay: begin and commit emit nothing and every update is the complete original
  load/MMA/store operation, exactly the unoptimized semantics.

The decision uses the inspectable tuple-pressure model of gpu.md: accumulator plus held and
streamed fragment registers per lane against the budget (64 logical registers before sm_90,
96 from sm_90; `--gpu-tensor-tuple-budget=N` overrides it, 0 restores the default). Only
stable-WMMA families qualify; mma.sync families (FP8, sparse, block-scaled) replay.
Each decision is annotated in the PTX as `// mtlc.tensor_<kind> resident|replay ...`.
"""
from __future__ import annotations

from .capabilities import select_wmma
from .common import mat, operands
from .narrow import claims
from .wmma import load_frag, run_grid_on, store_frag, sub_addrs


def default_budget(profile) -> int:
    return 96 if profile.sm >= 90 else 64


def tuple_pressure(plan) -> int:
    """Logical registers per lane a resident group holds: the accumulator tuples plus the
    held (smaller) side's fragments and one streamed fragment (wmma._chunk's schedule)."""
    gm, gn = plan.grid
    side = max(plan.a_regs, plan.b_regs)
    return gm * gn * plan.d_regs + min(gm, gn) * side + side


def _groups(em) -> dict:
    groups = getattr(em, "tensor_groups", None)
    if groups is None:
        groups = em.tensor_groups = {}
    return groups


def _remark(em, ins, text: str) -> None:
    """An `--explain` line for the backend half of the decision (em.module is the PTX
    module emitter, whose .module is the IR module)."""
    remarks = getattr(getattr(em.module, "module", None), "remarks", None)
    if remarks is not None:
        remarks.add(em.fn, ins.span, "ptx", text)


def lower_begin(em, ins) -> None:
    desc, group, kind = ins.attrs["desc"], ins.attrs["group"], ins.attrs.get("kind", "loop")
    budget = em.tensor_tuple_budget or default_budget(em.profile)
    why = None
    plan = None
    if claims(desc):
        why = "mma.sync family (resident only for stable WMMA)"
    elif desc.accumulator_type != desc.result_type:
        why = "accumulator and result formats differ"
    else:
        plan = select_wmma(desc, em.profile, ins.span)
        need = tuple_pressure(plan)
        if need > budget:
            why = f"tuple pressure {need} > budget {budget}"
    if why is not None:
        _groups(em)[group] = None
        em.raw(f"\t// mtlc.tensor_{kind} replay group={group}: {why}")
        _remark(em, ins, f"tensor_{kind} group {group}: replay ({why})")
        return
    C = mat(em, desc, operands(ins), "c")
    gm, gn = plan.grid
    pm, pn, _ = plan.shape
    addrs = sub_addrs(em, C, [(i * pm, j * pn) for i in range(gm) for j in range(gn)])
    acc = [[load_frag(em, plan, "c", C, addrs[i * gn + j], desc.accumulator_type)
            for j in range(gn)] for i in range(gm)]
    _groups(em)[group] = (plan, acc)
    em.raw(f"\t// mtlc.tensor_{kind} resident group={group} tuple={tuple_pressure(plan)} "
           f"budget={budget}")
    _remark(em, ins, f"tensor_{kind} group {group}: resident (C loaded once, D stored once; "
            f"tuple pressure {tuple_pressure(plan)} <= budget {budget})")


def resident_group(em, ins):
    """(plan, accumulator tuples) when `ins` is an update of a resident group, else None."""
    res = ins.attrs.get("residency")
    if not res:
        return None
    return _groups(em).get(res[0])


def lower_update(em, ins, state) -> None:
    """One resident update: A and B fragments of every K chunk into the group's tuple."""
    plan, acc = state
    desc, ops = ins.attrs["desc"], operands(ins)
    A, B = mat(em, desc, ops, "a"), mat(em, desc, ops, "b")
    run_grid_on(em, plan, desc, A, B, acc, plan.chunks)


def lower_commit(em, ins) -> None:
    state = _groups(em).get(ins.attrs["group"])
    if state is None:
        return
    plan, acc = state
    desc = ins.attrs["desc"]
    D = mat(em, desc, operands(ins), "d")
    gm, gn = plan.grid
    pm, pn, _ = plan.shape
    addrs = sub_addrs(em, D, [(i * pm, j * pn) for i in range(gm) for j in range(gn)])
    for i in range(gm):
        for j in range(gn):
            store_frag(em, plan, D, addrs[i * gn + j], desc.result_type, acc[i][j])


def lower_fused_epilogue(em, ins) -> bool:
    """A `tensor.epilogue` the optimizer fused onto a group (attrs["fused"]): when the group
    is resident, apply alpha, ReLU or clamp to every accumulator register, in the memory
    path's exact order (t = alpha*t rounded; ordered t < 0 -> +0; t < lo -> lo, t > hi ->
    hi), before the commit's one store. Returns False (the caller runs the complete memory
    operation) when the group replays."""
    group = ins.attrs.get("fused")
    state = _groups(em).get(group) if group is not None else None
    if state is None:
        return False
    _, acc = state
    ops = operands(ins)
    desc = ins.attrs["desc"]
    alpha = em.reg(ops["alpha"]) if "alpha" in ops else None
    lo = em.reg(ops["clamp_min"]) if desc.activation == "clamp" else None
    hi = em.reg(ops["clamp_max"]) if desc.activation == "clamp" else None
    zero = "0f00000000"
    for row in acc:
        for regs in row:
            for r in regs:
                if alpha is not None:
                    em.emit(f"mul.rn.f32 {r}, {alpha}, {r}")
                p = em.new("p")
                if desc.activation == "relu":
                    em.emit(f"setp.lt.f32 {p}, {r}, {zero}")
                    em.emit(f"selp.f32 {r}, {zero}, {r}, {p}")
                elif desc.activation == "clamp":
                    em.emit(f"setp.lt.f32 {p}, {r}, {lo}")
                    em.emit(f"selp.f32 {r}, {lo}, {r}, {p}")
                    em.emit(f"setp.gt.f32 {p}, {r}, {hi}")
                    em.emit(f"selp.f32 {r}, {hi}, {r}, {p}")
    em.raw(f"\t// mtlc.tensor_epilogue fused on resident group={group}")
    _remark(em, ins, f"tensor epilogue applied to group {group}'s registers before its store")
    return True
