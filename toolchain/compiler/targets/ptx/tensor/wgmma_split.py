"""Workgroup-scope tensor.matmul regions (docs/reference/gemm.md) on every PTX profile.

The workgroup computes one desc.m x desc.n region with gpu.md's exact region semantics.
- sm_90a (PTX 8.3+) and a wgmma-capable descriptor (wgmma.supported): a uniform run-time
  predicate (wgmma.native_pred) selects the TMA/mbarrier/wgmma pipeline (wgmma.py);
- otherwise, and whenever that predicate fails (another block size, too little dynamic
  shared memory, misaligned operands), the region is split into subgroup regions of
  SUB_M x SUB_N (or the largest 16-multiple that divides the region) which the warps take
  round-robin; each runs today's subgroup lowering (matmul.py: WMMA interior, exact replay
  at the edges), so every profile computes the same function. With mma.sync (sm_80+) and
  A row-major, B column-major, a region WMMA cannot take (a leading dimension that is not
  a multiple of 16 bytes, misaligned bases, edges, K < 16, f16/bf16 results) runs on the
  warp MMA instead (split_mma16.py: the same function, only the f32 sum order differs).
A region that is not a multiple of 16 in M and N is refused (E0505) on every profile,
but for the pipeline's width 232, split as 240 columns with N cut at its own (cut_width).
An f16/bf16 result of f16/bf16 inputs with an f32 accumulator (C f32, D rounded once) has
no subgroup WMMA form: its split regions are the warp MMA's where split_mma16 is
available, else the exact cooperative replay (replay.py, f32 accumulation, one rounding).
A fused epilogue (attrs["epilogue"], wgmma_epilogue.py) runs on the pipeline's registers,
inside that replay before the rounding, or as each subgroup's pass over its own f32/f64
sub-region (and subgroup-scope region) once D is stored.
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from ....ir import tensor as T
from ....ir.module import Param
from ....ir.types import U32
from .. import ops as I
from . import split_mma16, wgmma
from .capabilities import refuse
from .common import label, mat, operands
from .matmul import lower_matmul
from .replay import Region, replay
from .resident import remark
from .wgmma_epilogue import Fused
from . import wgmma_streamk as streamk
from .wgmma_persistent import Tiles, each_tile

SUB_M, SUB_N = 32, 64                # under the native path's 168-register cap: no spills


class _SubRegion:
    """The tensor.matmul instruction of one subgroup sub-region: the workgroup's operands
    with the origin replaced by registers computed here."""

    def __init__(self, ins, desc, row, col):
        self.attrs = {**ins.attrs, "desc": desc}
        self.span = ins.span
        roles = ins.attrs["roles"]
        self.operands = [row if r == "row" else col if r == "column" else v
                         for r, v in zip(roles, ins.operands)]


def rounded_result(desc) -> bool:
    """f16/bf16 inputs, f32 accumulator, f16/bf16 result: D = round(C + A*B) once."""
    return (desc.a_type == desc.b_type and desc.a_type in ("f16", "bf16")
            and desc.accumulator_type == "f32" and desc.result_type in ("f16", "bf16")
            and not (desc.sparse or desc.scaled) and desc.math == "multiply_add"
            and desc.rounding == "default")


def _sub(n: int, want: int) -> int:
    return next(s for s in (want, 32, 16) if n % s == 0)


def sub_desc(desc, span):
    """The descriptor of a workgroup region's subgroup regions (SUB_M x SUB_N, or the
    largest 16-multiple that divides it); a region not a multiple of 16 is refused."""
    if desc.m % 16 or desc.n % 16:
        raise refuse(desc, "workgroup regions are split into 16-multiple subgroup regions; "
                     "M and N must be multiples of 16 (N may also be "
                     f"{', '.join(str(n) for n in wgmma.SHAPES_N if n % 16)})", span)
    return replace(desc, scope="subgroup", m=_sub(desc.m, SUB_M), n=_sub(desc.n, SUB_N),
                   persistent=0)


def _reg_param(em, reg: str, name: str) -> Param:
    p = Param(U32, name, -1)
    em.vals[id(p)] = reg
    return p


def linear_ids(em) -> tuple[str, str]:
    """(linear work-item id, work-items per workgroup) as u32 registers."""
    tid, n, t = em.new("r"), em.new("r"), em.new("r")
    em.put(I.mov("u32", tid, "%tid.z"), I.mov("u32", t, "%ntid.y"), I.mov("u32", n, "%tid.y"),
           I.mad("lo", "u32", tid, tid, t, n), I.mov("u32", t, "%ntid.x"),
           I.mov("u32", n, "%tid.x"), I.mad("lo", "u32", tid, tid, t, n),
           I.mov("u32", n, "%ntid.y"), I.binary("mul.lo", "u32", n, n, t),
           I.mov("u32", t, "%ntid.z"), I.binary("mul.lo", "u32", n, n, t))
    return tid, n


def _uses_dynamic_shared(fn) -> bool:
    return any(i.op == "gpu.dynamic_shared" for b in fn.blocks for i in b.instrs)


def native_refusal(em, desc, supported=None, no_form: str = "no wgmma form for this "
                   "descriptor (docs/reference/gemm.md: f16/bf16, m128 or m256, k64)"
                   ) -> str | None:
    """Why the sm_90a pipeline cannot be compiled for this region (None: it can);
    `supported`: whether the pipeline has a form for desc (wgmma.supported), `no_form` the
    reason when it has not."""
    p, shape = em.profile, em.fn.block_shape
    if not (p.has("wgmma") and p.has("tensormap.replace")):
        return f"{p.target} has no wgmma/TMA (sm_90a, PTX 8.3+)"
    if not (supported or wgmma.supported)(desc):
        return no_form
    if wgmma.schedule_refusal(desc):
        return wgmma.schedule_refusal(desc)
    if shape is not None and shape[0] * shape[1] * shape[2] != wgmma.threads(desc):
        return f"the kernel declares a block other than {wgmma.threads(desc)} work-items"
    if _uses_dynamic_shared(em.fn):
        return "the kernel uses the launch-sized workgroup view itself"
    return None


def native_available(em, desc) -> bool:
    return native_refusal(em, desc) is None


def _region(em, desc, ops, row: str, col: str) -> Region:
    return Region(desc, *(mat(em, desc, ops, w) for w in "abcd"), row, col,
                  *(em.reg(ops[k]) for k in "mnk"))


def lower_any_matmul(em, ins) -> None:
    """The tensor.matmul entry of the PTX op table: workgroup scope here, else matmul.py
    (then a fused epilogue's memory pass over the region, wgmma_epilogue.py)."""
    desc, ops = ins.attrs["desc"], operands(ins)
    fused = Fused(em, ins) if "epilogue" in ins.attrs else None
    if desc.scope != "workgroup":
        lower_matmul(em, ins)
        if fused is not None:
            fused.memory_pass(em, _region(em, desc, ops, em.reg(ops["row"]),
                                          em.reg(ops["column"])))
        return
    from . import wgmma_fp8                  # FP8 regions: their own pipeline and replay
    if wgmma_fp8.claims(desc):               # (imported here: it imports this module)
        wgmma_fp8.lower(em, ins)
        return
    sub = sub_desc(split_width(desc, ops), ins.span)
    tid, ntid = linear_ids(em)
    end = label(em, "wgm_end")
    row, col = em.reg(ops["row"]), em.reg(ops["column"])
    tiles = Tiles(em, desc, row, col, em.reg(ops["m"]), em.reg(ops["n"])) \
        if desc.persistent else None
    why = native_refusal(em, desc)
    if why is None:
        mats = [mat(em, desc, ops, w) for w in "abcd"]
        if all(m.space in ("", ".global") for m in mats):
            g = Region(desc, *mats, *(em.reg(ops[k]) for k in
                                      ("row", "column", "m", "n", "k")),
                       W=em.reg(ops["workspace"]) if "workspace" in ops else None)
            split = label(em, "wgm_split")
            ok = wgmma.native_pred(em, g, ntid)
            narrow = None
            if tiles:                        # the pipeline's tile loop is u32 (Tiles)
                narrow = pair_tiles(em, desc, row, col, g.M, g.N)
                narrow.fits_u32(em, ok)
            if tiles:                        # `cluster: 2` pairs, or nothing does
                ok, share, cluster = paired(em, g, tid, ok)
            elif wgmma.unpaired(desc):
                share, cluster = None, 1
            else:                            # the experimental one-region pairing
                ok, share = wgmma.cluster_agree(em, g, tid, ok)
                cluster = wgmma.CLUSTER
            em.put(I.bra(split, guard=ok, negated=True, uniform=True))
            wgmma.lower_native(em, g, tid, end, share, fused, narrow)
            em.put(I.label(split))
            entry_cap(em, wgmma.threads(desc), cluster)
        else:
            why = "an operand is not in global memory"
    remark(em, ins, (_persistent_remark(desc, why) if tiles else _region_remark(why))
           + split_remark(em, desc) + schedule_remark(desc, why) + cluster_remark(desc, why)
           + store_remark(desc, why) + streamk_remark(desc, why, "workspace" in ops))
    each_tile(em, tiles, "wgm_split", end, row, col, lambda r, c, then: _split_region(
        em, ins, desc, sub, ops, tid, ntid, then, fused, r, c))
    em.put(I.label(end))


def split_width(desc, ops: dict):
    """The descriptor the split path computes a region with: desc, or for a pipeline
    width of no whole 16 columns (232) the region rounded up to them (another width
    that is no multiple of 16 is refused: sub_desc), a leading dimension neither
    in desc nor among the operands fixed at desc's default (which follows the width)."""
    if desc.n % 16 == 0 or desc.n not in wgmma.SHAPES_N:
        return desc
    lds = {f"ld{w}": T.default_ld(desc, w) for w in "abcd"
           if getattr(desc, f"ld{w}") is None and f"ld{w}" not in ops}
    return replace(desc, n=-(-desc.n // 16) * 16, **lds)


def cut_width(em, desc, ops: dict, col: str) -> tuple[object, dict]:
    """(descriptor, operands) the split path computes the region at column `col` with:
    desc and ops, or split_width's region with N cut at the region's own last column,
    min(N, col + n). Split regions predicate every column past N, so the rounded region
    writes exactly desc's columns."""
    wide = split_width(desc, ops)
    if wide is desc:
        return desc, ops
    n, x = em.new("r"), em.new("r")           # col + min(max(N, col) - col, n): no wrap
    em.put(I.binary("max", "u32", x, em.reg(ops["n"]), col), I.binary("sub", "u32", n, x, col),
           I.binary("min", "u32", n, n, desc.n), I.binary("add", "u32", n, n, col))
    return wide, {**ops, "n": _reg_param(em, n, "n")}


def _split_region(em, ins, desc, sub, ops, tid, ntid, end, fused, row: str,
                  col: str) -> None:
    """_split of the region at (row, col), through cut_width."""
    wide, cut = cut_width(em, desc, ops, col)
    if wide is not desc:
        ins = SimpleNamespace(attrs={**ins.attrs, "desc": wide}, span=ins.span,
                              operands=[cut["n"] if r == "n" else v
                                        for r, v in zip(ins.attrs["roles"], ins.operands)])
    _split(em, ins, wide, sub, cut, tid, ntid, end, fused, row, col)


def _region_remark(why: str | None) -> str:
    form = "the sm_90a pipeline" if why is None else f"split regions ({why})"
    return (f"tensor_matmul: one region per workgroup, {form}; not persistent (no "
            "`persistent:` option): each workgroup sets up and drains its own pipeline")


def _persistent_remark(desc, why: str | None) -> str:
    order = f"{desc.m}x{desc.n} tiles in groups of {desc.persistent} row tiles, grid-strided"
    if why is None:
        return ("tensor_matmul: persistent pipeline: barriers and tensor maps set up once "
                f"per workgroup, ring stage and phase carried across {order}; the producer "
                "loads the next tile while the consumers run the epilogue (split regions "
                "per tile when the launch does not fit)")
    return f"tensor_matmul: persistent tile loop over split regions ({order}); no pipeline: {why}"


def split_remark(em, desc) -> str:
    """The --explain words of the split regions' form (nothing where it is WMMA/replay)."""
    if not split_mma16.available(em, desc):
        return ""
    where = "" if rounded_result(desc) else " where WMMA's alignment test fails"
    return f"; split regions on {split_mma16.FORM}{where}"


def schedule_remark(desc, why: str | None) -> str:
    """The --explain words of `schedule: pingpong` or `auto` (nothing for the default)."""
    if desc.schedule == "cooperative":
        return ""
    if why is not None:
        return f"; `schedule: {desc.schedule}` has no effect without the pipeline"
    if wgmma.auto(desc) and not wgmma.halves(desc):
        return (f"; automatic schedule: the cooperative pipeline alone (the half tiles "
                f"of a {desc.n}-column tile, {desc.n // 2} columns, are no wgmma width)")
    if wgmma.auto(desc):
        return (f"; automatic schedule: the ping-pong pipeline (each consumer warpgroup "
                f"computes its own {desc.m}x{desc.n // 2} half of every tile) when A's and "
                f"B's base addresses and row pitches are all multiples of "
                f"{wgmma.AUTO_ALIGN} bytes, else the cooperative one (a misaligned row "
                "straddles an extra L2 sector per copied row: L2-bound); one uniform "
                "run-time test, both pipelines in the kernel")
    return (f"; ping-pong schedule: each consumer warpgroup computes its own {desc.m}x"
            f"{desc.n // 2} half of every tile, the two taking turns at the tensor cores "
            "(one's epilogue overlaps the other's main loop)")


def paired(em, g, tid: str, ok: str) -> tuple[str, bool | None, int]:
    """A persistent region's (native predicate, share, workgroups per cluster): with
    `cluster: 2`, wgmma.cluster_pair's predicate and share True (the pipeline pairs);
    else (ok, None, 1)."""
    if g.desc.cluster == 2:
        return wgmma.cluster_pair(em, g, tid, ok), True, 2
    return ok, None, 1


def pair_tiles(em, desc, row, col, M, N):
    """The pipeline's (u32) tile loop: pair tiles for `cluster: 2` (wgmma_persistent)."""
    return Tiles(em, desc, row, col, M, N, wide=False, pair=desc.cluster == 2)


def streamk_remark(desc, why: str | None, workspace: bool) -> str:
    """The --explain words of what a `workspace:` does (wgmma_streamk; nothing without
    one)."""
    if not workspace:
        return ""
    if why is not None or not wgmma.STREAM_K:
        return "; `workspace:` unused (no pipeline to split)" if why is not None else \
            "; `workspace:` unused (stream-K switched off)"
    if wgmma.tall(desc):
        return "; `workspace:` unused (stream-K splits 128-row tiles only)"
    where = "auto's cooperative branch" if wgmma.auto(desc) else "the cooperative pipeline"
    tiles, units = ("pair tiles", "clusters") if desc.cluster == 2 else ("tiles", "workgroups")
    which = f"the {tiles} of a launch with fewer {tiles} than {units}" \
        if wgmma.STREAM_K < 2 else f"the {tiles} of the last round"
    return (f"; stream-K: {where} cuts {which} along K into up to "
            f"{streamk.MAX_PARTS} parts (at run time: the fewest that make that round "
            f"shortest{'; auto then takes that branch' if wgmma.auto(desc) else ''}), "
            f"summed in order through the workspace (at least "
            f"{streamk.COUNTERS_PER_WORKGROUP * 4}·G bytes rounded up to 256, plus "
            f"{streamk.SLOTS_PER_WORKGROUP * desc.m * desc.n * 4}·G, for G workgroups; "
            f"zero before the first launch, left zero)")


def store_remark(desc, why: str | None) -> str:
    """The --explain words of how the pipeline stores D (wgmma.tma_store, _store_pred;
    nothing without the pipeline)."""
    if why is not None:
        return ""
    if not wgmma.TMA_STORE:
        return "; D stored from the registers"
    forms = wgmma.forms(desc)
    by_engine = [d for d in forms if wgmma.tma_store(d)]
    if not by_engine:
        return (f"; D stored from the registers (a {wgmma.box_n(desc)}-column epilogue "
                f"holds no whole {wgmma.ROW_BYTES}-byte box)")
    ahead = ", the next box's C loaded before this box's sums," if wgmma.STORE_C_AHEAD \
        else ""
    rest = "" if len(by_engine) == len(forms) else \
        "; its ping-pong branch stores from the registers (a half tile holds no whole box)"
    widths = sorted({wgmma.box_n(d) for d in by_engine if not wgmma.whole_boxes(d)})
    if widths:
        rest += (f"; the last box of a {' or '.join(map(str, widths))}-column epilogue is "
                 f"clipped at that width by a second, rank-3 map of D (past N, by the "
                 f"first)")
    return (f"; D stored through shared memory by the copy engine{ahead} when N, D's base "
            f"and its row pitch are multiples of 16 bytes and the launch gives "
            f"{wgmma.shared_bytes(desc)} bytes of dynamic shared memory, else from the "
            f"registers (the pipeline itself needs {wgmma.ring_bytes(desc)})" + rest)


def cluster_remark(desc, why: str | None) -> str:
    """The --explain words of `cluster: 2` (nothing without it)."""
    if desc.cluster == 1:
        return ""
    if why is not None:
        return "; `cluster: 2` has no effect without the pipeline"
    box = "half tile's B box" if wgmma.pingpong(desc) else "B box"
    which = "; clusters of 2 (the cooperative pipeline; in the ping-pong one each " \
        "workgroup of a cluster runs alone)" if wgmma.auto(desc) else "; clusters of 2"
    return (f"{which}: the two workgroups of a cluster compute the two {desc.m}-row "
            f"halves of one {2 * desc.m}x{desc.n} pair tile, so they read the same B "
            f"columns; each copies half of every {box} and multicasts it to both, and a "
            "stage is refilled once the consumers of both workgroups released it (the "
            "grid's x extent must be a multiple of 2)")


def entry_cap(em, nthreads: int, cluster: int = 1) -> None:
    """setmaxnreg needs a register cap at entry: .maxntid plus .minnctapersm 1 (and the
    cluster shape when workgroups pair up: `cluster`, workgroups per cluster along x)."""
    dirs = getattr(em, "entry_directives", None)
    if dirs is None:
        dirs = em.entry_directives = []
    cluster = [f".reqnctapercluster {cluster}, 1, 1"] if cluster > 1 else []
    for d in (f".maxntid {nthreads}, 1, 1", ".minnctapersm 1", *cluster):
        if d not in dirs:
            dirs.append(d)


def round_robin(em, desc, sub, tid, ntid, end, row: str, col: str, body,
                down_first: bool = False) -> None:
    """The region at (row, col) as sub.m x sub.n subgroup regions the warps take
    round-robin, `body(r, c)` emitting one at origin (r, c); then `end`. Regions are
    numbered along rows, or (`down_first`) down columns: warps working at once then share
    more A rows and B columns (fewer distinct lines in flight)."""
    gm, gn = desc.m // sub.m, desc.n // sub.n
    i, nw, p = em.new("r"), em.new("r"), em.new("p")
    em.put(I.binary("shr", "u32", i, tid, 5), I.binary("add", "u32", nw, ntid, 31),
           I.binary("shr", "u32", nw, nw, 5))
    top = label(em, "wgm_sub")
    em.put(I.label(top), I.setp("ge", "u32", p, i, gm * gn),
           I.bra(end, guard=p, uniform=True))
    r, c = em.new("r"), em.new("r")
    if down_first:
        em.put(I.binary("rem", "u32", r, i, gm), I.binary("div", "u32", c, i, gm))
    else:
        em.put(I.binary("div", "u32", r, i, gn), I.binary("rem", "u32", c, i, gn))
    em.put(I.mad("lo", "u32", r, r, sub.m, row), I.mad("lo", "u32", c, c, sub.n, col))
    body(r, c)
    em.put(I.binary("add", "u32", i, i, nw), I.bra(top, uniform=True))


def _split(em, ins, desc, sub, ops, tid, ntid, end, fused, row: str, col: str) -> None:
    """The region at (row, col) as subgroup regions the warps take round-robin (on the
    warp MMA where split_mma16 is available and WMMA is not); then `end`."""
    def old() -> None:
        round_robin(em, desc, sub, tid, ntid, end, row, col,
                    lambda r, c: _sub_region(em, ins, desc, sub, ops, fused, r, c))
    if split_mma16.available(em, desc):
        split_mma16.split(em, desc, sub, ops, tid, ntid, end, fused, row, col, old)
    else:
        old()


def _sub_region(em, ins, desc, sub, ops, fused, r: str, c: str) -> None:
    if rounded_result(desc):
        em.profile.need("warp.sync", "exact cooperative tensor replay", ins.span)
        replay(em, _region(em, sub, ops, r, c), 0, False,
               k_loop=fused.replay_k_loop() if fused is not None else None)
    else:
        lower_matmul(em, _SubRegion(ins, sub, _reg_param(em, r, "row"),
                                    _reg_param(em, c, "column")))
        if fused is not None:
            fused.memory_pass(em, _region(em, sub, ops, r, c))
