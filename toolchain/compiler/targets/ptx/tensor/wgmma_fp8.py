"""FP8 (E4M3/E5M2) workgroup-scope tensor.matmul: the sm_90a wgmma pipeline, exact replay
everywhere else (docs/reference/gemm-fp8.md).

Semantics, for every in-range element of the desc.m x desc.n region (row + r < M,
column + c < N): S = sum(q < K) A[r,q]*B[q,c] accumulated in f32 from 0, then
t = fma.rn(S, s, C[r,c]) with s = a_scale*b_scale (mul.rn of the two per-tensor f32
values, each one when its side has no scale), or t = add.rn(S, C[r,c]) without scales;
then the fused epilogue (wgmma_epilogue.py: alpha, bias, ReLU/clamp) on t, then D's one
rounding (cvt.rn to f16/bf16, or t itself for f32). C is f32. Out-of-range elements are
neither read nor written.

- sm_90a (wgmma + tensormap.replace), A row-major and B column-major (both K-major: FP8
  wgmma reads no other), C/D row-major, desc.m == 128, desc.n in SHAPES_N and desc.k ==
  BK: a uniform run-time predicate (native_pred) selects the warp-specialized pipeline of
  wgmma.py, with FP8's element format (Elem: one byte an element) and the scale as its
  combination of C: warpgroup 0 streams BK-byte K chunks of A and B with TMA
  (u8 tensor maps, 128-byte swizzle; out-of-range bytes are zero-filled, and E4M3/E5M2 0x00
  is +0, so M/N/K tails are exact) through a ring of `stages` slots with full/empty
  mbarriers; warpgroups 1 and 2 each own 64 rows and issue BK/32
  `wgmma.mma_async m64nNk32.f32.<a>.<b>` per slot. The byte geometry is exactly the f16
  pipeline's: one 128-byte swizzle row is 128 FP8 elements (64 f16), and each k32
  instruction advances 32 bytes along it, so descriptors, barriers and the accumulator
  mapping are unchanged. The epilogue applies the scale and C together (one fma per
  element), then the fused epilogue, then the store;
- otherwise (another profile or descriptor, or the predicate fails: another block size,
  too little dynamic shared memory, misaligned A/B (16 bytes) or C/D, a leading dimension
  of A/B that is not a multiple of 16 elements) the region is split into subgroup
  regions taken round-robin by the warps: on the FP8 warp MMA where the profile has it
  and A/B are K-major (fp8_split_mma.py: 32 x 32 regions, complete warps), else by exact
  cooperative replay (replay.py: every FP8 byte decoded exactly, f32 fma.rn in K order;
  wgmma_split.sub_desc regions), each with the same final combination, epilogue and
  rounding. Replay and the pipeline agree
  bit for bit when every partial sum is exact in f32 (the tests' small-integer data);
  otherwise they differ only by the order of the f32 sum (the tensor core's is
  unspecified).
`persistent: G` runs both forms over the grid-strided tile loop (wgmma_persistent.py).
"""
from __future__ import annotations

from .. import ops as I
from . import fp8_split_mma, wgmma
from .capabilities import refuse
from .common import label, mat, operands
from .fp8 import FP8
from .replay import Region, _k_loop, replay
from .resident import remark
from .wgmma import SHAPES_N, shared_bytes, threads  # noqa: F401 (launch sizes: bench)
from .wgmma_epilogue import Fused
from .wgmma_persistent import Tiles, each_tile, tile_loop as _tile_loop  # noqa: F401 (tests)
from .wgmma_split import (cluster_remark, cut_width, entry_cap, linear_ids, native_refusal,
                          pair_tiles, paired, round_robin, schedule_remark, split_width,
                          store_remark, streamk_remark, sub_desc)
from ..lower_memory import SPACE

# FP8's emission orders (wgmma.Elem) keep its PTX as it was when written on its own
ELEM = wgmma.Elem(1, "wgf8", "wgf8_ring", tmap_type="u8", knobs=False, and_pred=True,
                  a_base=False, maps_in_order=True, zero_prev=True, c_after_preds=True)
BK = wgmma.ROW_BYTES // ELEM.size         # K elements (bytes) of tensor_matmul's k128 block
KI = I.WGMMA_K["e4m3"]                    # K per wgmma instruction
OUTS = ("f32", "f16", "bf16")


def claims(desc) -> bool:
    """The workgroup regions this module lowers: FP8 A or B."""
    return desc.scope == "workgroup" and (desc.a_type in FP8 or desc.b_type in FP8)


def check(desc, span) -> None:
    """Refuse what neither form computes (E0505)."""
    if desc.a_type not in FP8 or desc.b_type not in FP8:
        raise refuse(desc, "FP8 workgroup regions take E4M3/E5M2 for both A and B", span)
    if desc.accumulator_type != "f32" or desc.result_type not in OUTS:
        raise refuse(desc, "FP8 workgroup regions accumulate in f32 with an f32, f16 or "
                     f"bf16 result, not {desc.accumulator_type}/{desc.result_type}", span)
    if desc.sparse or desc.math != "multiply_add" or desc.rounding != "default" or \
            desc.overflow != "wrap":
        raise refuse(desc, "FP8 workgroup regions are dense, default-rounded and "
                     "non-saturating", span)
    for side in "ab":
        if getattr(desc, f"{side}_scale_mode") not in ("none", "per_tensor"):
            raise refuse(desc, "FP8 workgroup regions take per_tensor f32 scales (block "
                         "scales are the subgroup mma.sync family)", span)


def supported(desc) -> bool:
    """Whether the pipeline can run this descriptor (otherwise split regions only)."""
    return (desc.m == 128 and desc.n in SHAPES_N and desc.k == BK
            and desc.stored_layout("a") == "row" and desc.stored_layout("b") == "col"
            and desc.c_layout == desc.d_layout == "row")


def refusal(em, desc) -> str | None:
    """Why the pipeline cannot be compiled for this region (None: it can)."""
    return native_refusal(em, desc, supported, "no FP8 wgmma form for this descriptor (m128, "
                          f"n one of {SHAPES_N}, k{BK}, A row-major, B column-major, C/D "
                          "row-major)")


# ---- entry ----------------------------------------------------------------------------------
def lower(em, ins) -> None:
    """The whole FP8 workgroup region (wgmma_split.lower_any_matmul hands it over)."""
    desc, ops = ins.attrs["desc"], operands(ins)
    check(desc, ins.span)
    sub = sub_desc(split_width(desc, ops), ins.span)   # the replay regions
    em.profile.need("warp.sync", "exact cooperative tensor replay", ins.span)
    fused = Fused(em, ins) if "epilogue" in ins.attrs else None
    scale = _scale(em, ops)
    tid, ntid = linear_ids(em)
    end = label(em, "wgf8_end")
    row, col = em.reg(ops["row"]), em.reg(ops["column"])
    M, N, K = (em.reg(ops[k]) for k in "mnk")
    tiles = Tiles(em, desc, row, col, M, N) if desc.persistent else None
    why = refusal(em, desc)
    mats = [mat(em, desc, ops, w) for w in "abcd"]
    if why is None and not all(m.space in ("", ".global") for m in mats):
        why = "an operand is not in global memory"
    if why is None:
        g = Region(desc, *mats, row, col, M, N, K,
                   W=em.reg(ops["workspace"]) if "workspace" in ops else None)
        split = label(em, "wgf8_split")
        ok = native_pred(em, g, ntid)
        narrow = None
        if tiles:
            narrow = pair_tiles(em, desc, row, col, M, N)
            narrow.fits_u32(em, ok)
        ok, share, cluster = paired(em, g, tid, ok) if tiles else (ok, None, 1)
        em.put(I.bra(split, guard=ok, negated=True, uniform=True))
        _native(em, g, tid, end, scale, fused, narrow, share)
        em.put(I.label(split))
        entry_cap(em, threads(desc), cluster)
    on_mma = fp8_split_mma.available(em, desc)
    split_form = "split regions on the FP8 warp MMA" if on_mma else "split replay regions"
    form = f"the sm_90a FP8 wgmma pipeline ({split_form} where its run-time test fails)" \
        if why is None else f"{split_form} ({why})"
    remark(em, ins, f"tensor_matmul: FP8 {desc.a_type}x{desc.b_type} -> {desc.result_type}"
           f"{', per-tensor scales' if scale else ''}: {form}"
           f"{'; persistent tile loop' if tiles else ''}{schedule_remark(desc, why)}"
           f"{cluster_remark(desc, why)}{store_remark(desc, why)}"
           f"{streamk_remark(desc, why, 'workspace' in ops)}")
    if on_mma:
        sub = fp8_split_mma.sub_desc(split_width(desc, ops), sub)
    def region(r: str, c: str, then: str) -> None:
        wide, cut = cut_width(em, desc, ops, c)
        _split(em, wide, sub, cut, tid, ntid, then, scale, fused, r, c, on_mma)
    each_tile(em, tiles, "wgf8_split", end, row, col, region)
    em.put(I.label(end))


def _scale(em, ops) -> str | None:
    """s = a_scale * b_scale (mul.rn) from the per-tensor f32 values, None without scales."""
    vals = []
    for key in ("a_scale", "b_scale"):
        if key in ops:
            v, r = ops[key], em.new("f")
            em.put(I.ld(SPACE[v.type.space], "f32", r, I.mem(em.reg(v))))
            vals.append(r)
    if len(vals) == 2:
        s = em.new("f")
        em.put(I.binary("mul.rn", "f32", s, vals[0], vals[1]))
        return s
    return vals[0] if vals else None


def combine(em, t: str, s: str | None, c: str) -> None:
    """t = fma.rn(t, s, c) (scaled) or add.rn(t, c): the one combination both forms use."""
    em.put(I.fma("f32", t, t, s, c) if s else I.binary("add.rn", "f32", t, t, c))


# ---- split regions: the FP8 warp MMA (fp8_split_mma.py) or exact replay ---------------------
def _k_loop_of(scale, fused):
    """A replay K loop: acc holds C; S from 0 over K; acc = combine(S, C); the epilogue."""
    def run(em, g, gr, gc, q0, acc):
        s = em.new("f")
        em.put(I.mov("f32", s, "0f00000000"))
        _k_loop(em, g, gr, gc, q0, s)
        combine(em, s, scale, acc)
        em.put(I.mov("f32", acc, s))
        if fused is not None:
            fused.apply_at(em, acc, gr, gc)
    return run


def _split(em, desc, sub, ops, tid, ntid, end, scale, fused, row: str, col: str,
           on_mma: bool = False) -> None:
    """The region at (row, col) as subgroup regions taken round-robin, on the warp MMA
    (`on_mma`: complete warps) or by replay; then `end`."""
    def body(r: str, c: str) -> None:
        g = Region(sub, *(mat(em, sub, ops, w) for w in "abcd"), r, c,
                   *(em.reg(ops[k]) for k in "mnk"))
        again = lambda: replay(em, g, 0, False, k_loop=_k_loop_of(scale, fused))  # noqa: E731
        if on_mma:
            fp8_split_mma.region(em, g, scale, fused, again)
        else:
            again()
    round_robin(em, desc, sub, tid, ntid, end, row, col, body, down_first=on_mma)


# ---- the sm_90a pipeline (wgmma.py's, in FP8's element format) -----------------------------
def native_pred(em, g, ntid: str) -> str:
    """The uniform predicate of the pipeline (module docstring)."""
    return wgmma.native_pred(em, g, ntid, ELEM)


def _combine_with(scale: str | None):
    return lambda em, t, c: combine(em, t, scale, c)


def _native(em, g, tid: str, end: str, scale, fused, tiles, share=None) -> None:
    """The pipeline for a workgroup of exactly threads(desc) work-items; falls through to
    `end` with the workgroup reconverged (`share` True: paired, `cluster: 2`)."""
    wgmma.lower_native(em, g, tid, end, share, fused, tiles, ELEM, _combine_with(scale))


def _epilogue(em, g, wtid, wg, acc, scale, fused) -> None:
    """The pipeline's epilogue: t = combine(acc, s, C), the fused epilogue, D's rounding
    and store (tests run it on the interpreter with known accumulators)."""
    wgmma._epilogue(em, g, wtid, wg, acc, fused, ELEM, _combine_with(scale))
