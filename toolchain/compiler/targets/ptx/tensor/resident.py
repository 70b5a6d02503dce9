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
96 from sm_90; `--gpu-tensor-tuple-budget=N` overrides it, 0 restores the default). Both
register families qualify: stable WMMA (opaque fragments) and the direct m16n8 `mma.sync`
families (FP8, structured 2:4, block-scaled; mma_sync.Acc, a backend-owned coordinate
mapping) where the profile has their native instruction; elsewhere those replay.
Each decision is annotated in the PTX as `// mtlc.tensor_<kind> resident|replay ...`.
A `tensor.epilogue` the optimizer fused onto a group is lowered by epilogue.py, on the
registers (`Group`) or, when it needs coordinates WMMA does not have, after `store_now`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as I
from .capabilities import select_wmma
from .common import Mat, mat, operands
from .frag import lane_ids
from .mma_sync import SUB_M, SUB_N, load_c, store_d
from .narrow import claims, native_tile
from .staging import (Stage, form, pipeline_why_not, prepare, run_update, settle,
                      staged_subgroups, why_not)
from .wmma import load_frag, store_frag, sub_addrs


def default_budget(profile) -> int:
    return profile.tuple_budget


def tuple_pressure(plan) -> int:
    """Logical registers per lane a resident WMMA group holds: the accumulator tuples plus
    the held (smaller) side's fragments and one streamed fragment (wmma._chunk's schedule).
    The m16n8 model is mma_sync.tuple_pressure."""
    gm, gn = plan.grid
    side = max(plan.a_regs, plan.b_regs)
    return gm * gn * plan.d_regs + min(gm, gn) * side + side


@dataclass
class Group:
    """A resident group: `wmma` (plan, acc = [i][j] fragment registers, coordinates opaque)
    or `m16n8` (native = narrow.Native, acc = mma_sync.Acc). `stored`: D is already in
    memory (store_now), so the commit stores nothing."""
    family: str
    desc: object                  # the updates' TensorDesc
    acc: object
    plan: object = None
    native: object = None
    stored: bool = False
    stage: Stage | None = None    # staged operand loads (staging.py), else direct
    em: object = None             # the emitter, for settle() in registers() (whose callers
                                  # read the registers without passing one)

    def registers(self) -> list[str]:
        """The accumulator registers, complete: a pipelined step still pending is
        multiplied first (staging.settle)."""
        if self.em is not None:
            settle(self.em, self.stage)
        rows = self.acc.regs if self.family == "m16n8" else self.acc
        return [r for row in rows for sub in row for r in sub]

    def store(self, em, D: Mat) -> None:
        settle(em, self.stage)
        if self.family == "m16n8":
            store_d(em, self.acc, D)
            return
        gm, gn = self.plan.grid
        pm, pn, _ = self.plan.shape
        addrs = sub_addrs(em, D, [(i * pm, j * pn) for i in range(gm) for j in range(gn)])
        for i in range(gm):
            for j in range(gn):
                store_frag(em, self.plan, D, addrs[i * gn + j], self.desc.result_type,
                           self.acc[i][j])


def _groups(em) -> dict:
    groups = getattr(em, "tensor_groups", None)
    if groups is None:
        groups = em.tensor_groups = {}
    return groups


def group_state(em, group) -> Group | None:
    """The resident state of `group` (None: it replays, or no such group)."""
    return _groups(em).get(group) if group is not None else None


def remark(em, ins, text: str) -> None:
    """An `--explain` line for the backend half of the decision (em.module is the PTX
    module emitter, whose .module is the IR module)."""
    remarks = getattr(getattr(em.module, "module", None), "remarks", None)
    if remarks is not None:
        remarks.add(em.fn, ins.span, "ptx", text)


def lower_begin(em, ins) -> None:
    desc, group, kind = ins.attrs["desc"], ins.attrs["group"], ins.attrs.get("kind", "loop")
    budget = em.tensor_tuple_budget or default_budget(em.profile)
    why = need = plan = native = None
    if claims(desc):
        native = native_tile(desc, em.profile, ins.span)
        if native is None:
            why = f"no native m16n8 instruction for this family on {em.profile.target}"
        else:
            need = native.pressure
    elif desc.accumulator_type != desc.result_type:
        why = "accumulator and result formats differ"
    else:
        plan = select_wmma(desc, em.profile, ins.span)
        need = tuple_pressure(plan)
    if why is None and need > budget:
        why = f"tuple pressure {need} > budget {budget}"
    if why is not None:
        _groups(em)[group] = None
        em.put(I.comment(f"mtlc.tensor_{kind} replay group={group}: {why}".strip()))
        remark(em, ins, f"tensor_{kind} group {group}: replay ({why})")
        return
    C = mat(em, desc, operands(ins), "c")
    if native is not None:
        grid = (desc.m // SUB_M, desc.n // SUB_N)
        state = Group("m16n8", desc, load_c(em, lane_ids(em), C, grid), native=native)
    else:
        gm, gn = plan.grid
        pm, pn, _ = plan.shape
        addrs = sub_addrs(em, C, [(i * pm, j * pn) for i in range(gm) for j in range(gn)])
        state = Group("wmma", desc, [[load_frag(em, plan, "c", C, addrs[i * gn + j],
                                          desc.accumulator_type)
                                for j in range(gn)] for i in range(gm)], plan=plan)
    _groups(em)[group] = state
    how = " m16n8" if native is not None else ""
    loads = _stage(em, ins, state, kind, group) if plan is not None else ""
    em.put(I.comment(f"mtlc.tensor_{kind} resident{how} group={group} tuple={need} "
                     f"budget={budget}{loads}".strip()))
    remark(em, ins, f"tensor_{kind} group {group}: resident{how} (C loaded once, D stored "
           f"once; tuple pressure {need} <= budget {budget})")


def _stage(em, ins, state: Group, kind: str, group) -> str:
    """Staged or direct operand loads for a resident WMMA group (staging.py): the
    annotation's suffix."""
    why = why_not(em, state.plan, state.desc)
    if why is not None:
        remark(em, ins, f"tensor_{kind} group {group}: operands loaded directly ({why})")
        return f" direct: {why}"
    sync = pipeline_why_not(em)
    state.stage = prepare(em, state.plan, state.desc, state.acc, sync is None)
    state.em = em
    if sync is None:
        remark(em, ins, f"tensor_{kind} group {group}: operands staged through shared memory, "
               "pipelined (two cp.async stages per warp: each update copies its step, "
               "A cached in L1, B in L2 only, and multiplies the step copied before it; a "
               f"run-time alignment test falls back to direct loads; {form(em)})")
        return " staged pipelined" + _guard(em)
    remark(em, ins, f"tensor_{kind} group {group}: operands staged through shared memory "
           "(one 16-byte load per lane per tile, wmma.load from .shared; a run-time "
           f"alignment test falls back to direct loads; {form(em)}; not pipelined: {sync})")
    return f" staged{_guard(em)} sync: {sync}"


def _guard(em) -> str:
    """The annotation of a launch-guarded staging form (no declared block shape)."""
    return "" if em.fn.block_shape else f" launch-guarded subgroups<={staged_subgroups(em.fn)}"


def resident_group(em, ins) -> Group | None:
    """The resident group `ins` updates, else None."""
    res = ins.attrs.get("residency")
    return group_state(em, res[0]) if res else None


def lower_update(em, ins, state: Group) -> None:
    """One resident update: A and B fragments of every K chunk into the group's tuple."""
    desc, ops = ins.attrs["desc"], operands(ins)
    if state.family == "m16n8":
        state.native.run(em, ops, state.acc)
        return
    A, B = mat(em, desc, ops, "a"), mat(em, desc, ops, "b")
    run_update(em, state.stage, state.plan, desc, A, B, state.acc, state.plan.chunks)


def store_now(em, state: Group, D: Mat) -> None:
    """Store a resident group's D at this point (the commit then stores nothing)."""
    state.store(em, D)
    state.stored = True


def lower_commit(em, ins) -> None:
    state = group_state(em, ins.attrs["group"])
    if state is None or state.stored:
        return
    state.store(em, mat(em, ins.attrs["desc"], operands(ins), "d"))
