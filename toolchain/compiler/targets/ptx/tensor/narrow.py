"""Routing of the `mma.sync`-family descriptors: unscaled FP8 (fp8.py), structured 2:4
(sparse.py) and block-scaled FP8/FP6/FP4 (scaled.py), for tensor.mma tiles and
tensor.matmul regions. The stable-WMMA families never come here (`claims` is False).

tensor.matmul semantics are those of matmul.py: for every in-range output of the region,
D = C + sum(q < K) A*B; out-of-range outputs are untouched. Selection is at run time with
uniform predicates: a native interior (region wholly in range, complete warp, K >= one
native chunk; fragment loads are per element, so no alignment is needed) keeps the
accumulators resident over all complete chunks and stores D once, then an exact
cooperative replay extends D over the K remainder; everything else replays from C.
FP8 replay decodes each byte exactly (fp8.load_decoded) and accumulates with f32 FMA; on a
profile without the family's instruction (FP8 mma.sync below PTX 8.4 / sm_89, mma.sp below
PTX 7.1 / sm_80, block-scaled off PTX 8.8 sm_120a/sm_121a) tiles and regions are that exact
replay alone, with the same descriptor checks;
sparse replay walks the same clamped masks as the native path (sparse.k_loop).
Block-scaled regions are lowered by scaled_matmul.py (its own guard, native interior and
scale-aware replay).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ....ir import tensor as T
from .. import ops as I
from . import fp8, scaled, sparse
from .capabilities import ANY_PROFILE, refuse
from .common import mat, operands
from .mma_sync import SUB_M, SUB_N, add_origin, run_tile, tuple_pressure
from .scaled_matmul import scale_mats, scaled_k_loop
from .replay import (Region, native_region_pred, native_then_replay,
                     replaces_native, replay_tile)
from .scaled_matmul import lower_scaled_matmul


def _has_sparse(profile) -> bool:
    return profile.has("mma.sp")


def claims(desc: T.TensorDesc) -> bool:
    return fp8.is_fp8(desc) or desc.sparse or desc.scaled


@dataclass(frozen=True)
class Native:
    """A tile lowered with the native m16n8 instruction: `run(em, ops, res=None)` emits it
    (with a resident mma_sync.Acc as `res`: accumulate into it, no C load, no D store);
    `pressure` is its resident tuple pressure (mma_sync.tuple_pressure)."""
    run: Callable
    pressure: int


def native_tile(desc: T.TensorDesc, profile, span) -> Native | None:
    """The native m16n8 lowering of a tensor.mma tile, after the capability checks; None
    when this profile lacks the family's instruction (tile_lowering replays it)."""
    grid = (desc.m // SUB_M, desc.n // SUB_N)
    if desc.scaled:
        if not scaled.has_target(profile):
            return None
        kind = scaled.check(desc, profile, span)
        a_spec, b_spec = scaled.KINDS[kind][4:6]
        return Native(scaled.tile_lowering(desc, profile, span),
                      tuple_pressure(grid, a_spec.regs, b_spec.regs, 1, 1))
    if desc.sparse:
        if not _has_sparse(profile):
            return None
        sparse.check(desc, profile, span)
        chunks = [sparse.form(desc, profile)] * (desc.k // 16)

        def run_sparse(em, ops, res=None):
            A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
            meta = sparse.Meta(sparse.meta_mat(em, ops, desc.k // 4))
            run_tile(em, A, B, C, D, grid, chunks, meta, res)
        return Native(run_sparse, tuple_pressure(grid, chunks[0].a.regs,
                                                 chunks[0].b.regs, a_word=1))
    if replaces_native(desc, profile):
        return None
    fp8.check(desc, profile, span, matmul=False)
    forms = fp8.tile_forms(desc)

    def run_fp8(em, ops, res=None):
        A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
        run_tile(em, A, B, C, D, grid, forms, None, res)
    return Native(run_fp8, tuple_pressure(grid, forms[0].a.regs, forms[0].b.regs))


def tile_lowering(desc: T.TensorDesc, profile, span):
    """Check capabilities now; return `run(em, ops)` that emits the whole tile: native
    (native_tile) or, on a profile without the family's instruction, exact replay."""
    native = native_tile(desc, profile, span)
    if native is not None:
        return native.run
    if desc.scaled:                                    # exact replay alone
        kind = scaled.check(desc, profile, span, native=False)
        block, stype = scaled.KINDS[kind][2], scaled.KINDS[kind][3]

        def run_scaled_replay(em, ops):
            replay_tile(em, desc, *(mat(em, desc, ops, w) for w in "abcd"), span,
                        lambda g: scaled_k_loop(*scale_mats(em, desc, ops, g.K, block),
                                                block, stype))
        return run_scaled_replay
    if desc.sparse:                                    # exact replay alone
        sparse.check(desc, ANY_PROFILE, span)

        def run_sparse_replay(em, ops):
            meta = sparse.meta_mat(em, ops, desc.k // 4)
            replay_tile(em, desc, *(mat(em, desc, ops, w) for w in "abcd"), span,
                        lambda g: sparse.k_loop(meta))
        return run_sparse_replay
    fp8.check(desc, ANY_PROFILE, span, matmul=False)   # no FP8 mma.sync: exact replay

    def run_replay(em, ops):
        replay_tile(em, desc, *(mat(em, desc, ops, w) for w in "abcd"), span)
    return run_replay


def _matmul_plan(desc: T.TensorDesc, profile, span):
    """(native Form, sparse?) of a region, after the capability checks."""
    if desc.sparse:
        sparse.check(desc, profile if _has_sparse(profile) else ANY_PROFILE, span)
        if desc.k != 16:
            raise refuse(desc, "structured 2:4 regions take K=16 native chunks", span)
        return sparse.form(desc, profile), True
    fp8.check(desc, ANY_PROFILE if replaces_native(desc, profile) else profile, span,
              matmul=True)
    if desc.k not in (16, 32):
        raise refuse(desc, "FP8 regions take K=16 or K=32 native chunks", span)
    return fp8.form(desc, desc.k), False


def lower_narrow_matmul(em, ins) -> None:
    desc, ops = ins.attrs["desc"], operands(ins)
    if desc.scaled:                                # exact replay (scaled_matmul.py)
        lower_scaled_matmul(em, ins)
        return
    form, is_sparse = _matmul_plan(desc, em.profile, ins.span)
    A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
    g = Region(desc, A, B, C, D, *(em.reg(ops[k]) for k in ("row", "column", "m", "n", "k")))
    k_loop = None
    if is_sparse:
        groups = em.new("r")
        em.put(I.binary("add", "u32", groups, g.K, 3), I.binary("shr", "u32", groups, groups, 2))
        meta = sparse.meta_mat(em, ops, groups)
        k_loop = sparse.k_loop(meta)
    def native(chunks):
        origins = [add_origin(em, A, g.row, 0), add_origin(em, B, 0, g.col),
                   add_origin(em, C, g.row, g.col), add_origin(em, D, g.row, g.col)]
        tile_meta = sparse.Meta(add_origin(em, meta, g.row, 0)) if is_sparse else None
        run_tile(em, *origins, (desc.m // SUB_M, desc.n // SUB_N), (form, chunks), tile_meta)
    if replaces_native(desc, em.profile) or is_sparse and not _has_sparse(em.profile):
        em.profile.need("warp.sync", "exact cooperative tensor replay", ins.span)
        native_then_replay(em, g, "tms", None, form.k, native, k_loop)   # replay alone
        return
    native_then_replay(em, g, "tms", native_region_pred(em, g, form.k), form.k, native,
                       k_loop)
