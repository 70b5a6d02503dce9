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
  BK: a uniform run-time predicate (native_pred) selects the same warp-specialized pipeline
  as the f16 one (wgmma.py): warpgroup 0 streams BK-byte K chunks of A and B with TMA
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
  of A/B that is not a multiple of 16 elements) the region is split into SUB_M x SUB_N
  subgroup regions taken round-robin by the warps, each computed by exact cooperative
  replay (replay.py: every FP8 byte decoded exactly, f32 fma.rn in K order) with the same
  final combination, epilogue and rounding. Replay and the pipeline agree bit for bit when
  every partial sum is exact in f32 (the tests' small-integer data); otherwise they differ
  only by the order of the f32 sum (the tensor core's is unspecified).
`persistent: G` runs both forms over the grid-strided tile loop (wgmma_persistent.py).
"""
from __future__ import annotations

from dataclasses import replace

from .. import isa
from .. import ops as I
from . import mbarrier as mb
from . import tma
from .capabilities import refuse
from .common import label, mat, operands
from .fp8 import FP8
from .replay import Region, _k_loop, replay
from .resident import remark
from .wgmma_epilogue import Fused, NativeBias
from .wgmma_persistent import Tiles, open_loop
from .wgmma_split import entry_cap, linear_ids, round_robin
from ..lower_memory import SPACE

BK = 128                                  # K elements (bytes) per ring slot: one swizzle row
KI = 32                                   # K per wgmma instruction
PRODUCER_REGS, CONSUMER_REGS = 40, 232
ENTRY_REGS = 168                          # the .maxntid 384 cap: 65536 / 384, rounded to 8
SMEM_LIMIT = isa.SM_LIMITS[isa.FEATURES["wgmma"][0].only[0]][1]
SHAPES_N = (64, 128, 192, 256)
EPILOGUE_BATCH = 32                       # C pairs loaded before their D stores
FUSED_BATCH = {"none": 16, "row": 16, "column": 16, "matrix": 8}
SUB_M, SUB_N = 32, 64                     # split regions (replay)
U8_ELEMTYPE = 0                           # tensormap.replace .elemtype of .u8
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
    if desc.m % 16 or desc.n % 16:
        raise refuse(desc, "workgroup regions are split into 16-multiple subgroup regions; "
                     "M and N must be multiples of 16", span)


def consumers(desc) -> int:
    return desc.m // 64


def threads(desc) -> int:
    return 128 * (1 + consumers(desc))


def stage_bytes(desc) -> int:
    return (desc.m + desc.n) * BK


def stages(desc) -> int:
    return max(2, min(6, (SMEM_LIMIT - 2048) // stage_bytes(desc)))


def shared_bytes(desc) -> int:
    """Dynamic shared memory the pipeline needs (ring + barriers + alignment slack)."""
    return 1024 + stages(desc) * stage_bytes(desc) + 16 * stages(desc)


def supported(desc) -> bool:
    """Whether the pipeline can run this descriptor (otherwise split regions only)."""
    return (desc.m == 128 and desc.n in SHAPES_N and desc.k == BK
            and desc.stored_layout("a") == "row" and desc.stored_layout("b") == "col"
            and desc.c_layout == desc.d_layout == "row")


def refusal(em, desc) -> str | None:
    """Why the pipeline cannot be compiled for this region (None: it can)."""
    p, shape = em.profile, em.fn.block_shape
    if not (p.has("wgmma") and p.has("tensormap.replace")):
        return f"{p.target} has no wgmma/TMA (sm_90a, PTX 8.3+)"
    if not supported(desc):
        return (f"no FP8 wgmma form for this descriptor (m128, n one of {SHAPES_N}, k{BK}, "
                "A row-major, B column-major, C/D row-major)")
    if shape is not None and shape[0] * shape[1] * shape[2] != threads(desc):
        return f"the kernel declares a block other than {threads(desc)} work-items"
    if any(i.op == "gpu.dynamic_shared" for b in em.fn.blocks for i in b.instrs):
        return "the kernel uses the launch-sized workgroup view itself"
    return None


# ---- entry ----------------------------------------------------------------------------------
def lower(em, ins) -> None:
    """The whole FP8 workgroup region (wgmma_split.lower_any_matmul hands it over)."""
    desc, ops = ins.attrs["desc"], operands(ins)
    check(desc, ins.span)
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
        g = Region(desc, *mats, row, col, M, N, K)
        split = label(em, "wgf8_split")
        ok = native_pred(em, g, ntid)
        narrow = None
        if tiles:
            narrow = Tiles(em, desc, row, col, M, N, wide=False)
            narrow.fits_u32(em, ok)
        em.put(I.bra(split, guard=ok, negated=True, uniform=True))
        _native(em, g, tid, end, scale, fused, narrow)
        em.put(I.label(split))
        entry_cap(em, threads(desc), paired=False)
    form = "the sm_90a FP8 wgmma pipeline" if why is None else f"split replay regions ({why})"
    remark(em, ins, f"tensor_matmul: FP8 {desc.a_type}x{desc.b_type} -> {desc.result_type}"
           f"{', per-tensor scales' if scale else ''}: {form}"
           f"{'; persistent tile loop' if tiles else ''}")
    sub = replace(desc, scope="subgroup", persistent=0,
                  m=next(s for s in (SUB_M, 32, 16) if desc.m % s == 0),
                  n=next(s for s in (SUB_N, 32, 16) if desc.n % s == 0))
    if tiles:
        t_row, t_col, close = open_loop(em, tiles, "wgf8_split")
        nxt = label(em, "wgf8_split_next")
        _split(em, desc, sub, ops, tid, ntid, nxt, scale, fused, t_row, t_col)
        em.put(I.label(nxt))
        close()
    else:
        _split(em, desc, sub, ops, tid, ntid, end, scale, fused, row, col)
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


# ---- split regions: exact replay ------------------------------------------------------------
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


def _split(em, desc, sub, ops, tid, ntid, end, scale, fused, row: str, col: str) -> None:
    """The region at (row, col) as subgroup replay regions taken round-robin; then `end`."""
    def body(r: str, c: str) -> None:
        g = Region(sub, *(mat(em, sub, ops, w) for w in "abcd"), r, c,
                   *(em.reg(ops[k]) for k in "mnk"))
        replay(em, g, 0, False, k_loop=_k_loop_of(scale, fused))
    round_robin(em, desc, sub, tid, ntid, end, row, col, body)


# ---- the sm_90a pipeline --------------------------------------------------------------------
def native_pred(em, g, ntid: str) -> str:
    """The uniform predicate of the pipeline (module docstring)."""
    desc = g.desc
    ok, t, q = em.new("p"), em.new("r"), em.new("p")

    def both(cmp: str, ty: str, a, b) -> None:
        em.put(I.setp(cmp, ty, q, a, b), I.binary("and", "pred", ok, ok, q))
    em.put(I.setp("eq", "u32", ok, ntid, threads(desc)),
           I.mov("u32", t, "%dynamic_smem_size"))
    both("ge", "u32", t, shared_bytes(desc))
    em.put(I.mov("u32", t, "%smid"))
    both("lt", "u32", t, tma.SLOTS)
    d_align = 7 if desc.result_type == "f32" else 3         # one D pair: 8 or 4 bytes
    for m, align, ld_mask in ((g.A, 15, 15), (g.B, 15, 15), (g.C, 7, 1), (g.D, d_align, 1)):
        lo = em.new("r")
        em.put(I.cvt("u32", "u64", lo, m.base), I.binary("and", "b32", lo, lo, align))
        both("eq", "u32", lo, 0)
        if isinstance(m.ld, int):
            if m.ld & ld_mask:
                em.put(I.setp("ne", "u32", ok, 0, 0))
        else:
            em.put(I.binary("and", "b32", lo, m.ld, ld_mask))
            both("eq", "u32", lo, 0)
    em.put(I.binary("and", "b32", t, g.col, 1))
    both("eq", "u32", t, 0)
    em.put(I.binary("or", "b32", t, g.row, g.col))
    if desc.persistent:                      # every tile origin < M or N: TMA coordinates
        em.put(I.binary("or", "b32", t, t, g.M), I.binary("or", "b32", t, t, g.N))
    both("lt", "u32", t, 2147483648)
    for extent in (g.M, g.N):                # a tensor map needs non-zero extents
        both("ne", "u32", extent, 0)
    return ok


def _native(em, g, tid: str, end: str, scale, fused, tiles) -> None:
    """The pipeline for a workgroup of exactly threads(desc) work-items; falls through to
    `end` with the workgroup reconverged."""
    desc = g.desc
    S = stages(desc)
    a_bytes, b_bytes = desc.m * BK, desc.n * BK
    mod = em.module
    dyn = mod._fresh(f"{em.fn.name}_wgf8_ring")
    mod.shared_out.append(f".extern .shared .align 1024 .b8 {dyn}[];")
    ws = tma.workspace(em, 2)
    sbase, sb, full, empty = (em.new("r") for _ in range(4))
    em.put(I.mov("u32", sbase, dyn), I.binary("add", "u32", sbase, sbase, 1023),
           I.binary("and", "b32", sbase, sbase, -1024),
           I.binary("add", "u32", sb, sbase, S * a_bytes),
           I.binary("add", "u32", full, sbase, S * (a_bytes + b_bytes)),
           I.binary("add", "u32", empty, full, 8 * S))
    nk, wg, p = em.new("r"), em.new("r"), em.new("p")
    em.put(I.binary("add", "u32", nk, g.K, BK - 1), I.binary("shr", "u32", nk, nk, 7),
           I.binary("shr", "u32", wg, tid, 7))
    init_done = label(em, "wgf8_init")
    em.put(I.setp("ne", "u32", p, tid, 0), I.bra(init_done, guard=p))
    for s in range(S):
        mb.init(em, f"{full}+{8 * s}", 1)
        mb.init(em, f"{empty}+{8 * s}", consumers(desc))
    em.put(I.fence_mbarrier_init(), I.label(init_done), I.bar_sync(0))
    consumer, join = label(em, "wgf8_consumer"), label(em, "wgf8_join")
    em.put(I.setp("ne", "u32", p, wg, 0), I.bra(consumer, guard=p))
    _producer(em, g, tid, nk, sbase, sb, full, empty, ws, S, a_bytes, b_bytes, tiles)
    # the producer takes its registers back only after the join (wgmma.py: the pool)
    em.put(I.bar_sync(0), I.setmaxnreg("inc", ENTRY_REGS), I.bra(join, uniform=True),
           I.label(consumer))
    _consumer(em, g, tid, wg, nk, sbase, sb, full, empty, S, a_bytes, b_bytes, scale,
              fused, tiles)
    em.put(I.bar_sync(0), I.label(join), I.setp("ne", "u32", p, tid, 0),
           I.bra(end, guard=p))
    for s in range(S):
        mb.inval(em, f"{full}+{8 * s}")
        mb.inval(em, f"{empty}+{8 * s}")
    em.put(I.bra(end, uniform=True))


def _tile_loop(em, g, tiles, name: str):
    if tiles is None:
        return g, lambda: None
    row, col, close = open_loop(em, tiles, name)
    return replace(g, row=row, col=col), close


def _advance(em, kb, s, ph, S) -> None:
    """kb += 1; s = (s + 1) mod S, flipping the phase parity on wrap."""
    w = em.new("p")
    em.put(I.binary("add", "u32", kb, kb, 1), I.binary("add", "u32", s, s, 1),
           I.setp("eq", "u32", w, s, S), I.mov("u32", s, 0).replaced(guard=w),
           I.binary("xor", "b32", ph, ph, 1).replaced(guard=w))


def _producer(em, g, tid, nk, sa, sb, full, empty, ws, S, a_bytes, b_bytes, tiles) -> None:
    desc = g.desc
    done, p = label(em, "wgf8_prod_done"), em.new("p")
    em.put(I.setmaxnreg("dec", PRODUCER_REGS), I.setp("ne", "u32", p, tid, 0),
           I.bra(done, guard=p))
    smid, ga, gb, slot_a, slot_b = em.new("r"), em.new("rd"), em.new("rd"), em.new("rd"), \
        em.new("rd")
    em.put(I.mov("u32", smid, "%smid"), I.mov("u64", ga, ws),
           I.mad("wide", "u32", ga, smid, 2 * tma.MAP_BYTES, ga),
           I.binary("add", "s64", gb, ga, tma.MAP_BYTES),
           I.cvta("global", slot_a, ga), I.cvta("global", slot_b, gb))
    for slot, m, rows, box in ((ga, g.A, g.M, desc.m), (gb, g.B, g.N, desc.n)):
        gaddr, pitch = em.new("rd"), em.new("rd")
        em.put(I.cvta("global", gaddr, m.base, to=True))
        em.put(I.mov("u64", pitch, m.ld) if isinstance(m.ld, int)
               else I.cvt("u64", "u32", pitch, m.ld))               # one byte an element
        tma.build(em, slot, gaddr, U8_ELEMTYPE, g.K, rows, pitch, box, BK)
    tma.publish(em, [slot_a, slot_b])
    kb, s, ph, k0 = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    dst_a, dst_b, fb, eb = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    em.put(I.mov("u32", s, 0), I.mov("u32", ph, 1))      # carried across tiles
    g, close = _tile_loop(em, g, tiles, "wgf8_prod")
    top, region_done = label(em, "wgf8_prod"), label(em, "wgf8_prod_region")
    em.put(I.mov("u32", kb, 0), I.mov("u32", k0, 0), I.label(top),
           I.setp("ge", "u32", p, kb, nk), I.bra(region_done, guard=p),
           I.mad("lo", "u32", eb, s, 8, empty))
    mb.wait(em, eb, ph)
    em.put(I.mad("lo", "u32", fb, s, 8, full))
    mb.arrive_expect_tx(em, fb, a_bytes + b_bytes)
    em.put(I.mad("lo", "u32", dst_a, s, a_bytes, sa), I.mad("lo", "u32", dst_b, s, b_bytes, sb))
    tma.load_2d(em, dst_a, slot_a, k0, g.row, fb)
    tma.load_2d(em, dst_b, slot_b, k0, g.col, fb)
    _advance(em, kb, s, ph, S)
    em.put(I.binary("add", "u32", k0, k0, BK), I.bra(top, uniform=True),
           I.label(region_done))
    close()
    em.put(I.label(done), I.bar_warp_sync(-1))


def _desc_base(em, smem: str) -> str:
    """The constant bits of a K-major 128B-swizzle wgmma descriptor plus smem >> 4."""
    d, lo = em.new("rd"), em.new("r")
    em.put(I.binary("shr", "u32", lo, smem, 4), I.binary("and", "b32", lo, lo, 16383),
           I.cvt("u64", "u32", d, lo),
           # LBO 16 B (unused when swizzled), SBO 1024 B (8 rows x 128 B), 128B swizzle
           I.binary("or", "b64", d, d, (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)))
    return d


def _consumer(em, g, tid, wg, nk, sa, sb, full, empty, S, a_bytes, b_bytes, scale, fused,
              tiles) -> None:
    desc = g.desc
    em.put(I.setmaxnreg("inc", CONSUMER_REGS))
    acc = [em.new("f") for _ in range(desc.n // 2)]
    one, p, leader, wtid, a_row = em.new("p"), em.new("p"), em.new("p"), em.new("r"), \
        em.new("r")
    em.put(I.setp("eq", "u32", one, 0, 0), I.binary("and", "b32", wtid, tid, 127),
           I.setp("eq", "u32", leader, wtid, 0), I.binary("sub", "u32", a_row, wg, 1),
           I.mad("lo", "u32", a_row, a_row, 64 * BK, sa))
    da0, db0 = _desc_base(em, a_row), _desc_base(em, sb)
    kb, s, ph, prev, have_prev = em.new("r"), em.new("r"), em.new("r"), em.new("r"), \
        em.new("p")
    em.put(I.mov("u32", s, 0), I.mov("u32", ph, 0), I.mov("u32", prev, 0))
    g, close = _tile_loop(em, g, tiles, "wgf8_cons")
    em.put(*(I.mov("f32", r, "0f00000000") for r in acc))
    em.put(I.mov("u32", kb, 0), I.setp("ne", "u32", have_prev, 0, 0))
    da, db, fb, soff = em.new("rd"), em.new("rd"), em.new("r"), em.new("rd")
    top, done = label(em, "wgf8_cons"), label(em, "wgf8_cons_done")
    em.put(I.label(top), I.setp("ge", "u32", p, kb, nk), I.bra(done, guard=p),
           I.mad("lo", "u32", fb, s, 8, full))
    mb.wait(em, fb, ph)
    em.put(I.wgmma_fence(), I.binary("mul.wide", "u32", soff, s, a_bytes >> 4),
           I.binary("add", "s64", da, da0, soff),
           I.binary("mul.wide", "u32", soff, s, b_bytes >> 4),
           I.binary("add", "s64", db, db0, soff))
    for ks in range(BK // KI):
        if ks:                                             # 32 bytes further along K
            em.put(I.binary("add", "s64", da, da, 2), I.binary("add", "s64", db, db, 2))
        em.put(I.wgmma_mma_async(desc.n, "f32", desc.a_type, desc.b_type, acc, da, db, one))
    em.put(I.wgmma_commit_group(), I.wgmma_wait_group(1))   # the previous slot is read
    _release(em, have_prev, leader, prev, empty)
    em.put(I.mov("u32", prev, s), I.setp("eq", "u32", have_prev, 0, 0))
    _advance(em, kb, s, ph, S)
    em.put(I.bra(top, uniform=True), I.label(done), I.wgmma_wait_group(0))
    _release(em, have_prev, leader, prev, empty)
    _epilogue(em, g, wtid, wg, acc, scale, fused)
    close()
    em.put(I.bar_warp_sync(-1), I.setmaxnreg("dec", ENTRY_REGS))


def _release(em, have_prev, leader, prev, empty) -> None:
    """The leader frees the slot read before this one (if any)."""
    pb, eb = em.new("p"), em.new("r")
    em.put(I.binary("and", "pred", pb, have_prev, leader), I.mad("lo", "u32", eb, prev, 8, empty),
           I.mbarrier_arrive(eb).replaced(guard=pb))


def _epilogue(em, g, wtid, wg, acc, scale, fused) -> None:
    """t = combine(acc, s, C), the fused epilogue, D's rounding and store, for the in-range
    elements of this warpgroup's 64 rows (wgmma's accumulator mapping, the same for FP8:
    lane l of warp w holds rows w*16 + l/4 (+8), columns 8j + 2(l%4) (+1))."""
    desc = g.desc
    lane, warp, r0, c0, t = (em.new("r") for _ in range(5))
    em.put(I.binary("and", "b32", lane, wtid, 31), I.binary("shr", "u32", warp, wtid, 5),
           I.binary("sub", "u32", r0, wg, 1), I.binary("shl", "b32", r0, r0, 6),
           I.mad("lo", "u32", r0, warp, 16, r0), I.binary("shr", "u32", t, lane, 2),
           I.binary("add", "u32", r0, r0, t), I.binary("add", "u32", r0, r0, g.row),
           I.binary("and", "b32", c0, lane, 3), I.binary("shl", "b32", c0, c0, 1),
           I.binary("add", "u32", c0, c0, g.col))
    cbase, dbase = em.new("rd"), em.new("rd")
    em.put(I.cvta("global", cbase, g.C.base, to=True),
           I.cvta("global", dbase, g.D.base, to=True))
    ldc, ldd = (_reg(em, m.ld) for m in (g.C, g.D))
    rt = desc.result_type
    dshift = 2 if rt == "f32" else 1
    bias = NativeBias(em, fused) if fused is not None and fused.bias is not None else None
    batch_size = EPILOGUE_BATCH if fused is None else FUSED_BATCH[fused.desc.bias_mode]
    left, inside, wide = em.new("r"), em.new("p"), em.new("p")
    em.put(I.binary("sub", "u32", left, g.N, c0), I.setp("gt", "u32", inside, g.N, c0),
           I.selp("u32", left, left, 0, inside), I.setp("gt", "u32", wide, left, desc.n),
           I.selp("u32", left, desc.n, left, wide))

    def cols(j: int) -> tuple[str, str]:
        """(both columns of pair j in range, only the first): c0 + 8j + 1 < N."""
        pb, po = em.new("p"), em.new("p")
        em.put(I.setp("gt", "u32", pb, left, 8 * j + 1), I.setp("eq", "u32", po, left, 8 * j + 1))
        return pb, po
    for half in (0, 1):
        row, prow = em.new("r"), em.new("p")
        skip = label(em, "wgf8_epi_skip")
        em.put(I.binary("add", "u32", row, r0, 8 * half), I.setp("lt", "u32", prow, row, g.M),
               I.bra(skip, guard=prow, negated=True))
        ca, da = em.new("rd"), em.new("rd")
        for base, ld, out, shift in ((cbase, ldc, ca, 2), (dbase, ldd, da, dshift)):
            w = em.new("rd")
            em.put(I.binary("mul.wide", "u32", out, row, ld), I.cvt("u64", "u32", w, c0),
                   I.binary("add", "s64", out, out, w), I.binary("shl", "b64", out, out, shift),
                   I.binary("add", "s64", out, out, base))
        if bias is not None:
            bias.start_half(em, row, c0)
        pairs = desc.n // 8
        for j0 in range(0, pairs, batch_size):
            # all C (and bias) loads of a batch before its D stores (C may alias D)
            batch = range(j0, min(pairs, j0 + batch_size))
            cv, bv = {}, {}
            for j in batch:
                u, v = cv[j] = em.new("f"), em.new("f")
                pb, po = cols(j)
                em.put(I.mov("b32", u, 0), I.mov("b32", v, 0),
                       I.ld_vec(".global", "f32", I.vec(u, v), I.mem(ca, 32 * j), guard=pb),
                       I.ld(".global", "f32", u, I.mem(ca, 32 * j), guard=po))
                if bias is not None and bias.per_pair:
                    first = em.new("p")
                    em.put(I.binary("or", "pred", first, pb, po))
                    bv[j] = bias.load_pair(em, j, first, pb)
            for j in batch:
                x, y = acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]
                u, v = cv[j]
                combine(em, x, scale, u)
                combine(em, y, scale, v)
                if fused is not None:
                    bx, by = bias.scaled(em, bv.get(j)) if bias is not None else (None,) * 2
                    fused.apply(em, x, None if bx is None else (lambda b=bx: b))
                    fused.apply(em, y, None if by is None else (lambda b=by: b))
                _store_pair(em, rt, *cols(j), da, (8 * j) << dshift, x, y)
        em.put(I.label(skip))


def _store_pair(em, rt: str, pb: str, po: str, base: str, off: int, x: str, y: str) -> None:
    """D[c], D[c+1] = x, y (both when `pb`, only the first when `po`), rounded once to an
    f16/bf16 result (cvt.rn, like the replay's store)."""
    addr = I.mem(base, off)
    if rt == "f32":
        em.put(I.st_vec(".global", "f32", addr, I.vec(x, y)).replaced(guard=pb),
               I.st(".global", "f32", addr, x).replaced(guard=po))
        return
    w, h = em.new("r"), em.new("rs")
    em.put(I.cvt(f"{rt}x2", "f32", w, y, rounding="rn").replaced(srcs=(y, x)),  # x: low half
           I.st(".global", "b32", addr, w).replaced(guard=pb),
           I.cvt(rt, "f32", h, x, rounding="rn"),
           I.st(".global", "b16", addr, h).replaced(guard=po))


def _reg(em, v) -> str:
    if isinstance(v, str):
        return v
    r = em.new("r")
    em.put(I.mov("u32", r, v))
    return r
