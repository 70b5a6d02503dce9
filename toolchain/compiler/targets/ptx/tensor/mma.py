"""tensor.mma on PTX: one whole D = A*B + C tile as a stable-WMMA load/MMA/store sequence.

Subgroup scope: the calling warp executes the tile (all 32 lanes, a WMMA precondition).
Workgroup scope: every work-item reaches the operation; it is entry- and exit-ordered by
`bar.sync 0`, and warp 0 of the workgroup executes the tile in between, so the result is
visible to the whole workgroup afterwards.
"""
from __future__ import annotations

from .. import ops as I
from .capabilities import ANY_PROFILE, select_wmma
from .common import label, mat, operands
from .narrow import claims, tile_lowering
from .replay import replaces_native, replay_tile
from .resident import lower_update, resident_group
from .wmma import run_grid


def warp_zero(em) -> str:
    """A predicate that is true in warp 0 of the workgroup (linear thread id < 32)."""
    r = {k: em.new("r") for k in ("tx", "ty", "tz", "nx", "ny", "lin")}
    for k, sreg in (("tx", "%tid.x"), ("ty", "%tid.y"), ("tz", "%tid.z"),
                    ("nx", "%ntid.x"), ("ny", "%ntid.y")):
        em.put(I.mov("u32", r[k], sreg))
    em.put(I.mad("lo", "u32", r["lin"], r["tz"], r["ny"], r["ty"]),
           I.mad("lo", "u32", r["lin"], r["lin"], r["nx"], r["tx"]))
    p = em.new("p")
    em.put(I.setp("lt", "u32", p, r["lin"], 32))
    return p


def lower_mma(em, ins) -> None:
    desc = ins.attrs["desc"]
    state = resident_group(em, ins)
    if state is not None:                          # an update of a resident group
        lower_update(em, ins, state)
        return
    ops = operands(ins)
    narrow = tile_lowering(desc, em.profile, ins.span) if claims(desc) else None
    replay = narrow is None and replaces_native(desc, em.profile)   # no native WMMA here
    plan = None if narrow else select_wmma(desc, ANY_PROFILE if replay else em.profile,
                                           ins.span)
    skip = None
    if desc.scope == "workgroup":
        em.put(I.bar_sync(0))
        p, skip = warp_zero(em), label(em, "tmma_skip")
        em.put(I.bra(skip, guard=p, negated=True))
    if narrow is not None:                         # FP8, sparse, block-scaled: mma.sync
        narrow(em, ops)
    else:
        A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
        if replay:
            replay_tile(em, desc, A, B, C, D, ins.span)
        else:
            run_grid(em, plan, desc, A, B, C, D, plan.chunks)
    if skip is not None:
        em.put(I.label(skip), I.bar_sync(0))
