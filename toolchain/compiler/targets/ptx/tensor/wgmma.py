"""Workgroup-scope tensor.matmul on sm_90a: TMA ring + mbarriers + warp-specialized wgmma.

One workgroup computes one BM x BN output region (BM = 64 * consumers, BN = desc.n, BK K
elements a stage):
- warpgroup 0 is the producer: `setmaxnreg.dec` to 40, one thread builds the A/B tensor maps
  (tma.py) and streams K chunks through a `stages`-deep ring of 128-byte-swizzled shared
  buffers with `cp.async.bulk.tensor`, each stage completing on its full barrier
  (arrive.expect_tx); it waits on the stage's empty barrier before refilling it;
- warpgroups 1.. are consumers (`setmaxnreg.inc` to 232), each owning 64 rows: per stage
  they wait on full, issue BK/16 `wgmma.mma_async m64nBNk16` from shared-memory descriptors,
  commit, wait for the previous group and release that group's stage (empty arrive);
- the epilogue adds C, and each consumer warp writes D into shared boxes of 16 rows x
  128 bytes that its lane 0 stores with the copy engine (store_epilogue; D a tensor map
  built next to A's and B's), where _store_pred holds; else it stores D straight from
  the accumulators with per-element M/N predicates (row-major C/D, pairs of columns),
  EPILOGUE_BATCH pairs of C loaded before their D stores. An f16/bf16 result is rounded
  once from the f32 sum (C stays f32). A fused epilogue (wgmma_epilogue.py) runs on
  those registers between the C add and the store, its bias loaded with the C.
Out-of-range A/B elements are zero-filled by the copy engine, so M/N/K tails are exact.
The pipeline is parameterised by A's and B's element format (Elem): F16 here (f16/bf16,
k16 instructions, BK 64), wgmma_fp8.ELEM for E4M3/E5M2 (u8 tensor maps, k32, 128 elements
a stage). A stage is one swizzle row of K either way (STAGE_ROW bytes), so the ring, descriptors,
barriers and accumulator mapping are shared; `combine` is the hook of the final sum
(FP8: the per-tensor scale with C).

`cluster: 2` on a persistent region (docs/reference/gemm.md "Clusters of 2"; share True
below): workgroups run in clusters of 2 along x (`.reqnctapercluster`), the pair agrees
first (cluster_pair) and then computes the two desc.m-row halves of pair tiles
(wgmma_persistent.Tiles(pair=True)), which read the same B columns: each producer loads
half of every B box (load_b) and multicasts it to both workgroups, and each consumer
releases a stage on both workgroups' empty barriers, whose count is both workgroups'
consumers. With CLUSTER = 2 (experimental, off by default) one-region workgroups pair
the same way where their regions read the same B columns, decided at run time
(cluster_agree; share a predicate register).

The native path runs when the launch fits it (a uniform run-time predicate, else the
workgroup region is split into exact subgroup regions, wgmma_split.py): exactly
`threads(desc)` work-items, enough dynamic shared memory (`ring_bytes(desc)`), 16-byte
aligned A/B with 16-byte row pitches, 8-byte aligned C/D with even pitches and an even
column origin, origins below 2^31, M and N non-zero. The entry gets `.maxntid threads`
and `.minnctapersm 1` so that `setmaxnreg` has the register cap it needs.

A tall tile (`shape: m256nNk64`, the cooperative schedule, unpaired) keeps the two
consumer warpgroups: each computes 128 rows as two 64-row blocks against the same B stage
(blocks(desc)), n f32 accumulators a thread, so a stage of 256 A rows and n B rows feeds
twice the wgmma work of a 128-row one per byte of B (docs/reference/gemm.md "Tall tiles").

`schedule: pingpong` runs wgmma_pingpong.py's consumers and producer on the same ring;
`schedule: auto` emits both pipelines behind one uniform run-time branch (auto_pred:
128-byte aligned A/B rows take the ping-pong one), each with its own barriers and maps.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import isa
from .. import ops as I
from . import mbarrier as mb
from . import tma
from . import wgmma_streamk as streamk
from .common import label
from .wgmma_epilogue import NativeBias
from .wgmma_persistent import Tiles, tile_loop as _tile_loop

ROW_BYTES = 128                           # one 128-byte swizzle row: of a D store box,
#                                           and of a stage at STAGE_ROW's default
STAGE_ROW = 128                           # K bytes of A and B per stage: one swizzle row
#                                           (128 or 64; 64: the 64-byte swizzle, stages
#                                           half as large and twice as many in the ring,
#                                           MAX_STAGES counting 128-byte ones; measured
#                                           9-35% slower on an H100 but for aligned rows
#                                           at 232 (equal): bench/gemm.py --baseline
#                                           STAGE_ROW=64, docs/internals/measurements.md
#                                           "64-byte stages")
PRODUCER_REGS, CONSUMER_REGS = 40, 232
ENTRY_REGS = 168                          # the .maxntid 384 cap: 65536 / 384, rounded to 8
# opt-in dynamic shared memory per workgroup on the one generation that has wgmma
SMEM_LIMIT = isa.SM_LIMITS[isa.FEATURES["wgmma"][0].only[0]][1]
SHAPES_N = (64, 128, 192, 232, 240, 256)
TALL_SHAPES_N = (64, 128, 160)            # widths of a 256-row tile: n accumulators a
#                                           thread, within the consumers' 232 registers
MIN_STAGES = 4                            # a second D store box per warp (store_buffers)
#                                           only where the ring keeps this many stages
# 232: the narrowest width that fits N = 3000 in 13 tiles (docs/reference/gemm.md "Choosing
# the tile"); its ping-pong halves (116) are no wgmma width, so it has no ping-pong form
EPILOGUE_BATCH = 32                       # C pairs loaded before their D stores (1: one
#                                           pair per round trip, the first measured form)
# C pairs per batch with a fused epilogue, per bias mode: its scalars and a bias read per
# pair share the consumer's registers; the largest batches ptxas 13.0 fits with no spills
FUSED_BATCH = {"none": 16, "row": 16, "column": 16, "matrix": 8}
PREFETCH_C_AHEAD = 0                      # K chunks before the end at which the producer
#                                           asks L2 for C (0: never; 8 measured no gain,
#                                           docs/internals/measurements.md "L2 prefetch of C")
PINGPONG_C_FIRST = False                  # True: ping-pong consumers load C into their
#                                           accumulators before waiting for their turn
#                                           (load_c), not in the epilogue; 2-5% slower
#                                           with C on the H200 (docs/reference/gemm.md;
#                                           bench/gemm.py --baseline PINGPONG_C_FIRST=1)
CLUSTER = 1                               # workgroups per cluster along x (2: B multicast,
#                                           experimental: docs/internals/measurements.md
#                                           "Clusters of 2")
STREAM_K = 1                              # what a `workspace:` splits along K
#                                           (wgmma_streamk): 1 the tiles of a launch
#                                           with fewer tiles than workgroups; 2 also the
#                                           last round after whole ones (5000x3000x4104
#                                           measured 3-13% slower, 9% with the clocks
#                                           held: each part's ring fill, partial store
#                                           and data waits cost more than the round
#                                           saves); 0 none
#                                           (bench/gemm.py --workspace's baseline)
TMA_STORE = True                          # D leaves through shared memory and the copy
#                                           engine (store_epilogue) where _store_pred
#                                           holds (False: st.global from the registers
#                                           everywhere; gemm.md "How D is stored")
CLIPPED_STORE = True                      # an epilogue width of no whole number of
#                                           boxes (240, ping-pong halves of 120, 96 or
#                                           32) stores through the copy engine too, its
#                                           last box clipped at the tile's width by a
#                                           rank-3 map (clipped_map; False: from the
#                                           registers, 1-10% slower on an H100,
#                                           docs/reference/gemm.md "How D is stored")
STORE_ROWS = 16                           # rows of a D store box: one warp's share of a
#                                           64-row block
STORE_BUFFERS = 2                         # boxes a warp has in flight or being written
STORE_C_AHEAD = 1                         # 1: the store epilogue loads the next batch's
#                                           C (and bias; a box without a fused epilogue)
#                                           before this batch's sums (0: each batch's
#                                           loads just before its sums, the first form)
PAIR_STATIC_BYTES = 1024                  # what ptxas reserves for a `cluster: 2` kernel's
#                                           48-byte static pair symbol (launch: dynamic +
#                                           static <= SMEM_LIMIT; every kernel keeps room)
MAX_STAGES = 6                            # ring depth cap (the cooperative tables' value)
PINGPONG_MAX_STAGES = 7                   # `schedule: pingpong`'s: its 32 KiB stages are
#                                           half the MMA time of a cooperative stage, so 7
#                                           hold 3.5 cooperative stages' worth of latency
#                                           (bench/gemm.py --pingpong-stages 6 compares)


@dataclass(frozen=True)
class Elem:
    """The element format of A and B, the one thing the pipeline's steps depend on:
    `size` bytes an element (a stage holds STAGE_ROW bytes of K: bk elements, 16-byte row pitches
    are multiples of 16 // size elements), the tensor-map element type (None: A's own),
    the stem of the pipeline's labels and of its ring symbol, and whether the experimental
    knobs (PREFETCH_C_AHEAD) apply.
    The FP8 pipeline was first written on its own; a few emission orders of it that change
    register numbers but nothing computed are kept (the PTX of every kernel stays the same):
    `and_pred`: native_pred ANDs each condition in with `and.pred` rather than `setp.and`;
    `a_base`: the A ring has its own base register (else the ring base itself);
    `maps_in_order`: the producer names both map addresses before their generic forms;
    `zero_prev`: the consumer zeroes the previous-stage register before its loop;
    `c_after_preds`: the epilogue zeroes a C pair after computing its column predicates."""
    size: int
    tag: str
    ring: str
    tmap_type: str | None = None
    knobs: bool = True
    and_pred: bool = False
    a_base: bool = True
    maps_in_order: bool = False
    zero_prev: bool = False
    c_after_preds: bool = False

    @property
    def bk(self) -> int:
        return STAGE_ROW // self.size


F16 = Elem(2, "wg", "wgmma_ring")         # f16 and bf16
BK = ROW_BYTES // F16.size                # K elements of the 16-bit path's instruction
#                                           block (tensor_matmul's k64)


def consumers(desc) -> int:
    """Consumer warpgroups: two, each with desc.m / 2 rows of the tile."""
    return 2


def blocks(desc) -> int:
    """64-row wgmma blocks a cooperative consumer computes per K step (2 for a tall
    tile: rows 0-63 and 64-127 of its half of the stage's A)."""
    return desc.m // 128


def tall(desc) -> bool:
    """A 256-row tile (module docstring)."""
    return desc.m == 256


def threads(desc) -> int:
    return 128 * (1 + consumers(desc))


def pingpong(desc) -> bool:
    """The ping-pong schedule (wgmma_pingpong.py): each consumer warpgroup computes its
    own m x n/2 half tile, the two taking turns at the tensor cores."""
    return desc.schedule == "pingpong"


def auto(desc) -> bool:
    """`schedule: auto`: both pipelines in the kernel, the ping-pong one taken at run time
    when the operands' rows are 128-byte aligned (auto_pred), else the cooperative one."""
    return desc.schedule == "auto"


def unpaired(desc) -> bool:
    """Whether a one-region workgroup never joins the experimental CLUSTER = 2 pairing:
    ping-pong does not, and auto's kernel has one cluster shape for both of its
    pipelines, so its cooperative one does not either, and a width of uneven B halves
    (b_halves: 232) pairs only where the pairing is known when compiling (`cluster: 2`
    pairs persistent regions of every schedule and width)."""
    return desc.schedule in ("pingpong", "auto") or not halves(desc) or tall(desc)


def branches(desc):
    """auto's two pipelines: (the ping-pong descriptor, the cooperative one)."""
    return replace(desc, schedule="pingpong"), replace(desc, schedule="cooperative")


def halves(desc) -> bool:
    """Whether the tile splits into two ping-pong halves of a wgmma width (a multiple of
    8 columns); `schedule: auto` on a width that does not (232) is the cooperative
    pipeline alone."""
    return desc.n % 16 == 0


def forms(desc):
    """The pipelines a kernel holds for desc: auto's branches (only the cooperative one
    for a width of no ping-pong halves, and for a tall tile), else desc itself."""
    if not auto(desc):
        return (desc,)
    return branches(desc) if halves(desc) and not tall(desc) else branches(desc)[1:]


def box_n(desc) -> int:
    """B rows (N columns) a stage holds: the tile's, or a ping-pong half tile's."""
    return desc.n // 2 if pingpong(desc) else desc.n


def stage_bytes(desc) -> int:
    return (desc.m + box_n(desc)) * STAGE_ROW


def d_bytes(desc) -> int:
    return 4 if desc.result_type == "f32" else 2


def store_cols(desc) -> int:
    """D columns of a store box: one 128-byte swizzle row."""
    return ROW_BYTES // d_bytes(desc)


def whole_boxes(desc) -> bool:
    """Whether the epilogue's width (the tile's, or a ping-pong half tile's) holds a whole
    number of store boxes; else its last box is clipped at the width (clipped_map)."""
    return box_n(desc) % store_cols(desc) == 0


def tma_store(desc) -> bool:
    """Whether D leaves through shared memory and the copy engine (store_epilogue)."""
    return TMA_STORE and (CLIPPED_STORE or whole_boxes(desc))


def epilogue_boxes(width: int, desc) -> int:
    """Store boxes of an epilogue `width` columns wide (the last one clipped)."""
    return -(-width // store_cols(desc))


def store_buffers(desc) -> int:
    """Boxes a warp rotates through: STORE_BUFFERS when a tile's boxes per warp are a
    multiple of it (the rotation restarts in step at every tile, so a buffer's slot is
    known when the kernel is compiled), else 1."""
    boxes = epilogue_boxes(box_n(desc), desc) * (2 if pingpong(desc) else blocks(desc))
    if boxes % STORE_BUFFERS or _stages(desc, STORE_BUFFERS) < MIN_STAGES <= _stages(desc, 1):
        return 1
    return STORE_BUFFERS


def store_bytes(desc) -> int:
    """Shared memory of the D store boxes: store_buffers boxes for each consumer warp."""
    return _store_bytes(desc, store_buffers(desc))


def _store_bytes(desc, nb: int) -> int:
    """store_bytes with nb boxes a warp."""
    if not tma_store(desc):
        return 0
    return 4 * consumers(desc) * nb * STORE_ROWS * ROW_BYTES


def _ring_fixed(desc) -> int:
    """A ring's bytes besides its stages: the 1024-byte alignment slack, and ping-pong's
    two turn barriers."""
    return 1024 + (16 if pingpong(desc) else 0)


def _ring_stage(desc) -> int:
    """A stage's bytes in the ring: its A and B tiles, and its full and empty barriers."""
    return stage_bytes(desc) + 16


def stages(desc) -> int:
    """The deepest ring whose ring_bytes, D's store boxes and a paired kernel's static
    shared memory (PAIR_STATIC_BYTES) fit in SMEM_LIMIT, up to the schedule's cap (in
    stages of ROW_BYTES: a finer STAGE_ROW holds as many bytes of K in more stages)."""
    return _stages(desc, store_buffers(desc))


def _stages(desc, nb: int) -> int:
    """stages with nb D store boxes a warp."""
    cap = (PINGPONG_MAX_STAGES if pingpong(desc) else MAX_STAGES) * ROW_BYTES // STAGE_ROW
    room = SMEM_LIMIT - PAIR_STATIC_BYTES - _ring_fixed(desc) - _store_bytes(desc, nb)
    return max(2, min(cap, room // _ring_stage(desc)))


def ring_bytes(desc) -> int:
    """Dynamic shared memory the native path needs (ring + barriers + alignment slack;
    ping-pong: its two turn barriers; auto: the larger of its two pipelines'); with less,
    the split path runs."""
    if auto(desc):
        return max(ring_bytes(d) for d in forms(desc))
    return _ring_fixed(desc) + stages(desc) * _ring_stage(desc)


def shared_bytes(desc) -> int:
    """Dynamic shared memory a launch should give: ring_bytes plus D's store boxes (the
    ring sized to leave room for them); a launch that gives only ring_bytes runs the
    pipeline with D stored from the registers."""
    if auto(desc):
        return max(shared_bytes(d) for d in forms(desc))
    return ring_bytes(desc) + store_bytes(desc)


def supported(desc) -> bool:
    """Whether wgmma can run this descriptor natively (otherwise split regions only)."""
    return (desc.a_type == desc.b_type and desc.a_type in ("f16", "bf16")
            and desc.accumulator_type == "f32" and desc.result_type in ("f32", "f16", "bf16")
            and (desc.n in SHAPES_N if desc.m == 128 else
                 desc.m == 256 and desc.n in TALL_SHAPES_N)
            and desc.k == BK
            and desc.stored_layout("a") == "row" and desc.stored_layout("b") == "col"
            and desc.c_layout == desc.d_layout == "row")


def schedule_refusal(desc) -> str | None:
    """Why desc's schedule has no pipeline at its width (None: it has)."""
    if tall(desc) and (pingpong(desc) or desc.cluster != 1):
        return ("a 256-row tile runs the cooperative schedule unpaired (each consumer "
                "warpgroup already holds 128 rows); `schedule: pingpong` and `cluster: 2` "
                "take 128-row tiles")
    if pingpong(desc) and not halves(desc):
        return (f"the ping-pong schedule's half tiles of a {desc.n}-column tile would be "
                f"{desc.n // 2} columns, no wgmma width (a multiple of 8); the cooperative "
                "schedule and `auto` take this width")
    return None


# GmmaDescriptor layout_type_ (bits 62..63) per swizzle row width in bytes
# (cute/arch/mma_sm90_desc.hpp: SWIZZLE_128B = 1, SWIZZLE_64B = 2, SWIZZLE_32B = 3)
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}


def ring_desc(em, smem: str) -> str:
    """desc_base for a K-major operand of the ring: STAGE_ROW-byte swizzle rows, 8 rows
    to a swizzle atom (SBO)."""
    return desc_base(em, smem, sbo=8 * STAGE_ROW, swizzle=STAGE_ROW)


def desc_base(em, smem: str, sbo: int = 1024, lbo: int = 16, swizzle: int = 128) -> str:
    """A wgmma shared-memory descriptor for the u32 shared address `smem` (cute's
    GmmaDescriptor: start address >> 4 in bits 0..13, leading byte offset >> 4 in 16..29,
    stride byte offset >> 4 in 32..45, base offset 0 (a 1024-byte aligned pattern), layout
    type in 62..63). The defaults are the GEMM's K-major 128B swizzle: LBO 16 B (unused
    when swizzled), SBO 1024 B (8 rows x 128 B)."""
    d, lo = em.new("rd"), em.new("r")
    em.put(I.binary("shr", "u32", lo, smem, 4), I.binary("and", "b32", lo, lo, 16383),
           I.cvt("u64", "u32", d, lo),
           I.binary("or", "b64", d, d, ((lbo >> 4) << 16) | ((sbo >> 4) << 32)
                    | (SWIZZLE_MODE[swizzle] << 62)))
    return d


def native_pred(em, g, ntid: str, elem: Elem = F16) -> str:
    """The uniform predicate of the native path (see the module docstring)."""
    desc = g.desc
    ok, t = em.new("p"), em.new("r")
    need, never = _conjunction(em, ok, elem)
    em.put(I.setp("eq", "u32", ok, ntid, threads(desc)),
           I.mov("u32", t, "%dynamic_smem_size"))
    need("ge", "u32", t, ring_bytes(desc))
    em.put(I.mov("u32", t, "%smid"))
    need("lt", "u32", t, tma.SLOTS)
    d_align = 7 if desc.result_type == "f32" else 3         # one D pair: 8 or 4 bytes
    row_mask = 16 // elem.size - 1                          # 16-byte A/B row pitches
    for m, align, ld_mask in ((g.A, 15, row_mask), (g.B, 15, row_mask), (g.C, 7, 1),
                              (g.D, d_align, 1)):
        lo = em.new("r")
        em.put(I.cvt("u32", "u64", lo, m.base), I.binary("and", "b32", lo, lo, align))
        need("eq", "u32", lo, 0)
        if isinstance(m.ld, int):
            if m.ld & ld_mask:
                never()
        else:
            em.put(I.binary("and", "b32", lo, m.ld, ld_mask))
            need("eq", "u32", lo, 0)
    em.put(I.binary("and", "b32", t, g.col, 1))
    need("eq", "u32", t, 0)
    em.put(I.binary("or", "b32", t, g.row, g.col))
    if desc.persistent:                      # every tile origin < M or N: TMA coordinates
        em.put(I.binary("or", "b32", t, t, g.M), I.binary("or", "b32", t, t, g.N))
    need("lt", "u32", t, 2147483648)
    for extent in (g.M, g.N):                # a tensor map needs non-zero extents
        need("ne", "u32", extent, 0)
    return ok


def _conjunction(em, ok: str, elem: Elem):
    """(need(cmp, ty, a, b): ok &= a cmp b, never(): ok = false) in elem's form."""
    if not elem.and_pred:
        return (lambda cmp, ty, a, b: em.put(I.setp_and(cmp, ty, ok, a, b, ok)),
                lambda: em.put(I.setp_and("ne", "u32", ok, 0, 0, ok)))
    q = em.new("p")

    def need(cmp: str, ty: str, a, b) -> None:
        em.put(I.setp(cmp, ty, q, a, b), I.binary("and", "pred", ok, ok, q))
    return need, lambda: em.put(I.setp("ne", "u32", ok, 0, 0))


def _cluster_sync(em) -> None:
    em.put(I.barrier_cluster_arrive(), I.barrier_cluster_wait())


def cluster_agree(em, g, tid: str, ok: str) -> tuple[str, str | None]:
    """(native, share): both workgroups of the pair run natively only if both predicates
    hold; they share B when both regions read the same B box sequence. Without clusters,
    (ok, None)."""
    if CLUSTER == 1:
        return ok, None
    return _exchange(em, tid, ok, (g.col, g.K, g.N, g.B.ld), (g.B.base,))


def cluster_pair(em, g, tid: str, ok: str) -> str:
    """`cluster: 2` on a persistent region: the uniform predicate of the paired pipeline,
    true on both workgroups of a cluster or on neither: both predicates hold and both
    name the same area (origin, M, N, K) and the same A and B (the two run the same tile
    sequence and auto's rule takes the same branch on both), and rank 1's rows of the last
    pair tile, up to 2·m past a tile origin, stay TMA coordinates (M < 2^31 - 2m)."""
    em.put(I.setp_and("lt", "u32", ok, g.M, 2 ** 31 - 2 * g.desc.m, ok))
    native, same = _exchange(em, tid, ok, (g.row, g.col, g.M, g.N, g.K, g.A.ld, g.B.ld),
                             (g.A.base, g.B.base))
    em.put(I.binary("and", "pred", native, native, same))
    return native


def _exchange(em, tid: str, ok: str, words, wides) -> tuple[str, str]:
    """Through distributed shared memory: (both workgroups' `ok`, every u32 of `words`
    and u64 of `wides` equal on both). Thread 0 writes its values to a static array,
    a cluster barrier, everyone reads the peer's copy (mapa), a second cluster barrier
    (both read before either may write again)."""
    mod = em.module
    x = mod._fresh(f"{em.fn.name}_wgmma_pair")
    at64 = -(-4 * (1 + len(words)) // 8) * 8
    mod.shared_out.append(f".shared .align 16 .b8 {x}[{at64 + 8 * len(wides)}];")
    mine = [em.new("r") for _ in range(1 + len(words))]
    em.put(I.selp("u32", mine[0], 1, 0, ok))
    for r, v in zip(mine[1:], words):
        em.put(I.mov("u32", r, v))
    p, skip = em.new("p"), label(em, "wg_pair")
    em.put(I.setp("ne", "u32", p, tid, 0), I.bra(skip, guard=p))
    for i, r in enumerate(mine):
        em.put(I.st(".shared", "u32", I.mem(x, 4 * i), r))
    for i, w in enumerate(wides):
        em.put(I.st(".shared", "u64", I.mem(x, at64 + 8 * i), w))
    em.put(I.label(skip))
    _cluster_sync(em)
    peer, xa = em.new("r"), em.new("r")
    em.put(I.mov("u32", peer, "%cluster_ctarank"), I.binary("xor", "b32", peer, peer, 1),
           I.mov("u32", xa, x), I.mapa(xa, xa, peer))
    native, share = em.new("p"), em.new("p")
    v, b = em.new("r"), em.new("rd")
    em.put(I.ld(".shared::cluster", "u32", v, I.mem(xa)),
           I.setp_and("ne", "u32", native, v, 0, ok), I.mov("pred", share, native))
    for i, r in enumerate(mine[1:], 1):
        em.put(I.ld(".shared::cluster", "u32", v, I.mem(xa, 4 * i)),
               I.setp_and("eq", "u32", share, v, r, share))
    for i, w in enumerate(wides):
        em.put(I.ld(".shared::cluster", "u64", b, I.mem(xa, at64 + 8 * i)),
               I.setp_and("eq", "u64", share, b, w, share))
    _cluster_sync(em)                        # both read before either may write again
    return native, share


def lower_native(em, g, tid: str, end: str, share: str | None = None, fused=None,
                 tiles=None, elem: Elem = F16, combine=None) -> None:
    """The whole native region for a workgroup of exactly threads(desc) work-items; `tid`
    is the linear work-item id; `fused`: a wgmma_epilogue.Fused or None; `tiles`: a
    wgmma_persistent.Tiles (persistent: the barriers and maps are set up once, then the
    producer and the consumers each run the tile loop with the ring's stage and phase
    carried from tile to tile, so the producer fills the ring with the next tile's chunks
    while the consumers run this tile's epilogue), or None for the one region at g's
    origin; `elem`: A's and B's element format; `combine(em, t, c)`: t = C + the sum
    (None: add.f32). Falls through to `end` with the workgroup reconverged."""
    desc = g.desc
    if auto(desc):
        _lower_auto(em, g, tid, end, share, fused, tiles, elem, combine)
        return
    S, nc, bn, bm = stages(desc), consumers(desc), box_n(desc), desc.m
    a_bytes, b_bytes = bm * STAGE_ROW, bn * STAGE_ROW
    pp = pingpong(desc)
    if pp:
        from . import wgmma_pingpong
        assert share in (None, True)         # only `cluster: 2` pairs ping-pong
    elif tiles is not None and g.W is not None and STREAM_K and not tall(desc):
        tiles = tiles.split_k(g.W, g.K, elem.bk)     # stream-K (wgmma_streamk)
    mod = em.module
    dyn = mod._fresh(f"{em.fn.name}_{elem.ring}")
    mod.shared_out.append(f".extern .shared .align 1024 .b8 {dyn}[];")
    ws = tma.workspace(em, 2)
    sok = _store_pred(em, g) if tma_store(desc) else False
    ws_d = tma.workspace(em, d_maps(desc)) if sok is not False else None

    # shared layout: [pad to 1024] S x A tile, S x B tile, the D store boxes (where sok
    # holds), S full barriers, S empty barriers
    sbase = em.new("r")
    sa = em.new("r") if elem.a_base else sbase
    sb, full, empty = (em.new("r") for _ in range(3))
    em.put(I.mov("u32", sbase, dyn), I.binary("add", "u32", sbase, sbase, 1023),
           I.binary("and", "b32", sbase, sbase, -1024))
    if elem.a_base:
        em.put(I.mov("u32", sa, sbase))
    em.put(I.binary("add", "u32", sb, sbase, S * a_bytes),
           I.binary("add", "u32", full, sbase, S * (a_bytes + b_bytes)),
           I.binary("add", "u32", empty, full, 8 * S))
    if ws_d:
        boxes = em.new("r")
        em.put(I.selp("u32", boxes, store_bytes(desc), 0, sok),
               I.binary("add", "u32", full, full, boxes),
               I.binary("add", "u32", empty, empty, boxes))
    nk, wg, p = em.new("r"), em.new("r"), em.new("p")
    em.put(I.binary("add", "u32", nk, g.K, elem.bk - 1),
           I.binary("shr", "u32", nk, nk, elem.bk.bit_length() - 1),
           I.binary("shr", "u32", wg, tid, 7))

    init_done = label(em, f"{elem.tag}_init")
    em.put(I.setp("ne", "u32", p, tid, 0), I.bra(init_done, guard=p))
    cnt = 1 if pp else nc                    # ping-pong: one consumer reads a stage
    if share is True:                        # `cluster: 2`: both workgroups' consumers
        cnt *= 2
    elif share:
        cnt = em.new("r")
        em.put(I.selp("u32", cnt, 2 * nc, nc, share))    # both workgroups' consumers
    for s in range(S):
        mb.init(em, f"{full}+{8 * s}", 1)
        mb.init(em, f"{empty}+{8 * s}", cnt)
    if pp:
        wgmma_pingpong.init_turns(em, empty, S)
    if ws_d:
        d_map(em, g, ws_d, sok)
    em.put(I.fence_mbarrier_init(), I.label(init_done))
    if share:
        _cluster_sync(em)                    # the peer's barriers exist before its copies
    else:
        em.put(I.bar_sync(0))

    consumer, join = label(em, f"{elem.tag}_consumer"), label(em, f"{elem.tag}_join")
    em.put(I.setp("ne", "u32", p, wg, 0), I.bra(consumer, guard=p))
    ring = (nk, sa, sb, full, empty, S, a_bytes, b_bytes)
    ws_d = (ws_d, sb, S * b_bytes, sok) if ws_d else None  # the boxes: after B's ring
    if pp:
        wgmma_pingpong.producer(em, g, elem, tid, ring, ws, tiles, share)
    else:
        _producer(em, g, elem, tid, ring, ws, share, tiles)
    # The register pool: the producer takes its registers back only after the join,
    # when the consumers have given theirs up. Its idle warps used to re-increase at
    # once, and could win the pool from the consumers' own increase at the start, which
    # then never succeeded: every warp waited for ever (an intermittent hang of
    # back-to-back launches, docs/internals/measurements.md "The register pool").
    _join_sync(em, share)
    em.put(I.setmaxnreg("inc", ENTRY_REGS), I.bra(join, uniform=True), I.label(consumer))
    if pp:
        wgmma_pingpong.consumer(em, g, elem, tid, wg, ring, fused, tiles, combine, share,
                                ws_d)
    else:
        _consumer(em, g, elem, tid, wg, ring, share, fused, tiles, combine, ws_d)
    _join_sync(em, share)
    em.put(I.label(join), I.setp("ne", "u32", p, tid, 0), I.bra(end, guard=p))
    for s in range(S):
        mb.inval(em, f"{full}+{8 * s}")
        mb.inval(em, f"{empty}+{8 * s}")
    if pp:
        wgmma_pingpong.inval_turns(em, empty, S)
    em.put(I.bra(end, uniform=True))


AUTO_ALIGN = 128                          # bytes: one TMA box row of K (ROW_BYTES) fits
#                                           its 32-byte L2 sectors exactly when every row
#                                           starts on this boundary


def auto_pred(em, g, elem: Elem = F16):
    """`schedule: auto`'s rule (docs/reference/gemm.md "Automatic schedule"): ping-pong
    when A's and B's base addresses and row pitches are all multiples of AUTO_ALIGN bytes,
    else cooperative. A misaligned row makes each 128-byte box row of a stage straddle
    one more 32-byte sector, and the kernel becomes L2-bound, where ping-pong's second
    copy of A per tile costs more than its overlap gains (the 5000x3000x4104 case,
    docs/internals/measurements.md). Returns a uniform predicate register, or False when a
    constant pitch already breaks the rule."""
    mask = AUTO_ALIGN // elem.size - 1       # row pitch in elements
    if any(isinstance(m.ld, int) and m.ld & mask for m in (g.A, g.B)):
        return False
    ok, t = em.new("p"), em.new("r")
    em.put(I.setp("eq", "u32", ok, 0, 0))
    for m in (g.A, g.B):
        em.put(I.cvt("u32", "u64", t, m.base), I.binary("and", "b32", t, t, AUTO_ALIGN - 1),
               I.setp_and("eq", "u32", ok, t, 0, ok))
        if not isinstance(m.ld, int):
            em.put(I.binary("and", "b32", t, m.ld, mask), I.setp_and("eq", "u32", ok, t, 0, ok))
    return ok


def _lower_auto(em, g, tid, end, share, fused, tiles, elem: Elem, combine) -> None:
    """Both pipelines behind auto_pred's uniform branch (each falls through to `end`);
    the launch gives shared_bytes(desc), the larger of the two rings. Paired
    (`cluster: 2`, share True): only the cooperative pipeline pairs, the one the rule
    takes for misaligned rows, where sharing B's boxes pays; the ping-pong pipeline runs
    each workgroup of the cluster on its own (`alone`), which measured as fast or faster
    than paired ping-pong on every aligned shape (docs/reference/gemm.md "Clusters of
    2"). The rule reads only A and B, which cluster_pair made the same on both
    workgroups, so both take the same branch. With a `workspace:`, a launch whose tiles
    all fit in one round and split takes the cooperative pipeline, which splits them
    (wgmma_streamk.prefer_split)."""
    pp, coop = (replace(g, desc=d) for d in branches(g.desc))
    rule = auto_pred(em, g, elem) if halves(g.desc) and not tall(g.desc) else False
    if rule is not False and tiles is not None and g.W is not None and STREAM_K:
        streamk.prefer_split(em, tiles.split_k(g.W, g.K, elem.bk), rule)
    if rule is False:
        lower_native(em, coop, tid, end, share, fused, tiles, elem, combine)
        return
    other = label(em, f"{elem.tag}_auto_coop")
    em.put(I.bra(other, guard=rule, negated=True, uniform=True))
    if share is True:
        lower_native(em, pp, tid, end, None, fused, alone(em, tiles), elem, combine)
    else:
        lower_native(em, pp, tid, end, share, fused, tiles, elem, combine)
    em.put(I.label(other))
    lower_native(em, coop, tid, end, share, fused, tiles, elem, combine)


def alone(em, tiles: Tiles) -> Tiles:
    """A paired kernel's tile loop without the pairing: every workgroup of the grid
    steps over the region's own tiles (the u32 loop: Tiles.fits_u32 counted it)."""
    return Tiles(em, tiles.own, tiles.row0, tiles.col0, tiles.M, tiles.N, wide=False)


def _join_sync(em, share) -> None:
    """All work-items of the workgroup (both workgroups of a sharing pair: no remote
    arrive or copy is still in flight); each role reaches it from its own code."""
    if share:
        _cluster_sync(em)
    else:
        em.put(I.bar_sync(0))


def _producer(em, g, elem: Elem, tid, ring, ws, share, tiles=None) -> None:
    desc = g.desc
    nk, sa, sb, full, empty, S, a_bytes, b_bytes = ring
    tag = elem.tag
    done, p = label(em, f"{tag}_prod_done"), em.new("p")
    em.put(I.setmaxnreg("dec", PRODUCER_REGS), I.setp("ne", "u32", p, tid, 0),
           I.bra(done, guard=p))
    half = rows = desc.n
    if share:                                # paired: B arrives as two boxes (b_halves)
        half, rows = paired_b_box(em, desc, share)
    slot_a, slot_b = _maps(em, g, elem, ws, rows)
    _producer_body(em, g, elem, ring, share, tiles, done, p, half, slot_a, slot_b)


def b_halves(desc) -> tuple[int, int]:
    """(B rows rank 0 copies, rows rank 1 copies from there on) of a `cluster: 2` pair's
    B box (the tile's, or a ping-pong half tile's): half each, or where half is no
    multiple of 8 rows (232: 116; ping-pong at 240: 60) the first rounded up to 8 (120
    and 112; 64 and 56), so that both boxes start on a 1024-byte swizzle atom, as the
    copy engine's 128-byte swizzling requires."""
    n = box_n(desc)
    first = -(-n // 16) * 8
    return first, n - first


def paired_b_box(em, desc, share) -> tuple[int, int | str]:
    """(the row rank 1's box starts at, this workgroup's box rows: a register where the
    ranks' boxes differ) of a paired producer's B map (b_halves)."""
    half, second = b_halves(desc)
    if second == half:
        return half, half
    assert share is True, "uneven halves pair persistent regions only (unpaired)"
    rank, one, rows = em.new("r"), em.new("p"), em.new("r")   # rank 0 the first rows
    em.put(I.mov("u32", rank, "%cluster_ctarank"), I.setp("ne", "u32", one, rank, 0),
           I.selp("u32", rows, second, half, one))
    return half, rows


def _maps(em, g, elem: Elem, ws, b_rows: int | str) -> tuple[str, str]:
    """Build this multiprocessor's A and B tensor maps (boxes of desc.m and `b_rows`
    rows); returns their generic addresses, published for this thread's copies."""
    desc = g.desc
    # this multiprocessor's two map slots: global addresses to write, generic to use
    smid, ga = em.new("r"), em.new("rd")
    gb = em.new("rd") if elem.maps_in_order else None
    slot_a, slot_b = em.new("rd"), em.new("rd")
    em.put(I.mov("u32", smid, "%smid"), I.mov("u64", ga, ws),
           I.mad("wide", "u32", ga, smid, 2 * tma.MAP_BYTES, ga))
    gb = gb or em.new("rd")
    em.put(I.binary("add", "s64", gb, ga, tma.MAP_BYTES), I.cvta("global", slot_a, ga),
           I.cvta("global", slot_b, gb))
    for slot, m, rows, box in ((ga, g.A, g.M, desc.m), (gb, g.B, g.N, b_rows)):
        gaddr, pitch = em.new("rd"), em.new("rd")
        em.put(I.cvta("global", gaddr, m.base, to=True))
        if isinstance(m.ld, int):
            em.put(I.mov("u64", pitch, m.ld * elem.size))
        elif elem.size == 1:
            em.put(I.cvt("u64", "u32", pitch, m.ld))
        else:
            em.put(I.binary("mul.wide", "u32", pitch, m.ld, elem.size))
        tma.build(em, slot, gaddr, elem.tmap_type or desc.a_type, g.K, rows, pitch, box,
                  elem.bk, swizzle=STAGE_ROW)
    tma.publish(em, [slot_a, slot_b])
    return slot_a, slot_b


def _producer_body(em, g, elem: Elem, ring, share, tiles, done, p, half, slot_a,
                   slot_b) -> None:
    nk, sa, sb, full, empty, S, a_bytes, b_bytes = ring
    tag = elem.tag
    kb, s, ph, k0 = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    dst_a, dst_b, fb, eb = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    em.put(I.mov("u32", s, 0),                       # the ring's position: carried across
           I.mov("u32", ph, 1))                      # tiles (first pass: empty is free)
    g, close = _tile_loop(em, g, tiles, f"{tag}_prod")
    pair = pair_regs(em) if share else None
    top, region_done = label(em, f"{tag}_prod"), label(em, f"{tag}_prod_region")
    end = nk
    if g.kc:                                         # stream-K: this unit's K chunks
        end = g.kc[1]
        em.put(I.mov("u32", kb, g.kc[0]),
               I.binary("shl", "b32", k0, kb, elem.bk.bit_length() - 1))
    else:
        em.put(I.mov("u32", kb, 0), I.mov("u32", k0, 0))
    em.put(I.label(top), I.setp("ge", "u32", p, kb, end), I.bra(region_done, guard=p),
           I.mad("lo", "u32", eb, s, 8, empty))
    mb.wait(em, eb, ph, cluster=share is not None)
    em.put(I.mad("lo", "u32", fb, s, 8, full))
    mb.arrive_expect_tx(em, fb, a_bytes + b_bytes)
    em.put(I.mad("lo", "u32", dst_a, s, a_bytes, sa), I.mad("lo", "u32", dst_b, s, b_bytes, sb))
    tma.load_2d(em, dst_a, slot_a, k0, g.row, fb)
    load_b(em, share, pair, dst_b, slot_b, k0, g.col, fb, half)
    if PREFETCH_C_AHEAD and elem.knobs:
        _prefetch_c(em, g, kb, end)
    _advance(em, kb, s, ph, S)
    em.put(I.binary("add", "u32", k0, k0, elem.bk), I.bra(top, uniform=True),
           I.label(region_done))
    close()
    em.put(I.label(done), I.bar_warp_sync(-1))


def pair_regs(em) -> tuple[str, str]:
    """(this workgroup's cluster rank, the ctaMask of both workgroups) of a paired
    producer."""
    rank, mask = em.new("r"), em.new("rs")
    em.put(I.mov("u32", rank, "%cluster_ctarank"), I.mov("u16", mask, 3))
    return rank, mask


def load_b(em, share, pair, dst_b: str, slot_b: str, k0: str, col: str, fb: str,
           half: int) -> None:
    """The stage's B box (columns `col` on) into dst_b, completing on fb. Unpaired: one
    copy. Paired (`share` True, or a run-time predicate, then only where it holds): the
    box as two halves of `half` rows; rank r copies half r and multicasts it to the same
    offset of both workgroups (`pair`: pair_regs), so each workgroup's full barrier still
    receives the whole box. Otherwise (the run-time predicate false) both halves here."""
    if not share:
        tma.load_2d(em, dst_b, slot_b, k0, col, fb)
        return
    rank, mask = pair
    dst_h, col_h = em.new("r"), em.new("r")
    alone = None
    if share is not True:
        own, alone = label(em, "wg_mc"), label(em, "wg_mc_end")
        em.put(I.bra(own, guard=share, negated=True))
    em.put(I.mad("lo", "u32", dst_h, rank, half * STAGE_ROW, dst_b),
           I.mad("lo", "u32", col_h, rank, half, col))
    tma.load_2d_multicast(em, dst_h, slot_b, k0, col_h, fb, mask)
    if alone is None:
        return
    em.put(I.bra(alone, uniform=True), I.label(own))
    tma.load_2d(em, dst_b, slot_b, k0, col, fb)
    em.put(I.binary("add", "u32", dst_h, dst_b, half * STAGE_ROW),
           I.binary("add", "u32", col_h, col, half))
    tma.load_2d(em, dst_h, slot_b, k0, col_h, fb)
    em.put(I.label(alone))


def _prefetch_c(em, g, kb, nk) -> None:
    """When the copy of K chunk max(nk - PREFETCH_C_AHEAD, 0) is issued, ask L2 for this
    region's rows of C (the 16-byte-aligned inside of each row's in-range bytes, so no
    byte outside C is named): the epilogue's C loads then find L2, and C's DRAM traffic
    overlaps the main loop instead of following it. A hint: exactness never depends on it."""
    desc = g.desc
    at, p, skip = em.new("r"), em.new("p"), label(em, "wg_pf_skip")
    em.put(I.binary("sub", "u32", at, nk, PREFETCH_C_AHEAD),
           I.setp("gt", "u32", p, nk, PREFETCH_C_AHEAD), I.selp("u32", at, at, 0, p),
           I.setp("ne", "u32", p, kb, at), I.bra(skip, guard=p))
    cols, rows, r, addr = em.new("r"), em.new("r"), em.new("r"), em.new("rd")
    em.put(I.binary("sub", "u32", cols, g.N, g.col),       # native: col < 2^31, N > 0
           I.setp("gt", "s32", p, cols, 0), I.bra(skip, guard=p, negated=True),
           I.binary("min", "u32", cols, cols, desc.n), I.binary("sub", "u32", rows, g.M, g.row),
           I.setp("gt", "s32", p, rows, 0), I.bra(skip, guard=p, negated=True),
           I.binary("min", "u32", rows, rows, desc.m))
    ld = _reg(em, g.C.ld)
    em.put(I.mad("wide", "u32", addr, g.row, ld, 0))
    w = em.new("rd")
    em.put(I.cvt("u64", "u32", w, g.col), I.binary("add", "s64", addr, addr, w),
           I.binary("shl", "b64", addr, addr, 2))
    base = em.new("rd")
    em.put(I.cvta("global", base, g.C.base, to=True), I.binary("add", "s64", addr, addr, base))
    pitch, nbytes = em.new("rd"), em.new("rd")
    em.put(I.binary("mul.wide", "u32", pitch, ld, 4),
           I.binary("mul.wide", "u32", nbytes, cols, 4), I.mov("u32", r, 0))
    top = label(em, "wg_pf")
    lo, hi, size = em.new("rd"), em.new("rd"), em.new("rd")
    em.put(I.label(top), I.binary("add", "s64", lo, addr, 15),
           I.binary("and", "b64", lo, lo, -16), I.binary("add", "s64", hi, addr, nbytes),
           I.binary("and", "b64", hi, hi, -16), I.binary("sub", "s64", size, hi, lo),
           I.setp("gt", "s64", p, size, 0))
    sz = em.new("r")
    em.put(I.cvt("u32", "u64", sz, size),
           I.guarded(I.cp_async_bulk_prefetch_l2(I.mem(lo), sz), p),
           I.binary("add", "s64", addr, addr, pitch), I.binary("add", "u32", r, r, 1),
           I.setp("lt", "u32", p, r, rows), I.bra(top, guard=p), I.label(skip))


def _advance(em, kb, s, ph, S) -> None:
    """kb += 1; s = (s + 1) mod S, flipping the phase parity on wrap."""
    w = em.new("p")
    em.put(I.binary("add", "u32", kb, kb, 1), I.binary("add", "u32", s, s, 1),
           I.setp("eq", "u32", w, s, S), I.guarded(I.mov("u32", s, 0), w),
           I.guarded(I.binary("xor", "b32", ph, ph, 1), w))


def d_maps(desc) -> int:
    """D's tensor maps a multiprocessor holds: the rank-2 one, and clipped_map's where the
    epilogue's width holds no whole number of boxes."""
    return 1 if whole_boxes(desc) else 2


def _d_slot(em, ws_d: str, desc, i: int = 0) -> tuple[str, str]:
    """(global, generic) address of this multiprocessor's D map slot i (d_maps of them)."""
    smid, ga, slot = em.new("r"), em.new("rd"), em.new("rd")
    em.put(I.mov("u32", smid, "%smid"), I.mov("u64", ga, ws_d),
           I.mad("wide", "u32", ga, smid, d_maps(desc) * tma.MAP_BYTES, ga))
    if i:
        em.put(I.binary("add", "s64", ga, ga, i * tma.MAP_BYTES))
    em.put(I.cvta("global", slot, ga))
    return ga, slot


def _store_pred(em, g) -> str | bool:
    """Whether D leaves through the copy engine: the launch gives shared_bytes (room for
    the boxes), and D is a tensor map the copy engine stores through exactly: a 16-byte
    aligned base and row pitch, and rows of whole 16-byte units (N a multiple of 16
    bytes: the H100 writes a box's last 16-byte unit of a row whole, up to 12 bytes past
    N, docs/reference/gemm.md "How D is stored"); else the epilogue stores D from the
    registers. A uniform predicate, or False when a constant pitch rules it out."""
    desc = g.desc
    if isinstance(g.D.ld, int) and g.D.ld * d_bytes(desc) % 16:
        return False
    ok, t = em.new("p"), em.new("r")
    per16 = 16 // d_bytes(desc) - 1
    em.put(I.mov("u32", t, "%dynamic_smem_size"),
           I.setp("ge", "u32", ok, t, shared_bytes(desc)),
           I.cvt("u32", "u64", t, g.D.base), I.binary("and", "b32", t, t, 15),
           I.setp_and("eq", "u32", ok, t, 0, ok), I.binary("and", "b32", t, g.N, per16),
           I.setp_and("eq", "u32", ok, t, 0, ok))
    if not isinstance(g.D.ld, int):
        em.put(I.binary("and", "b32", t, g.D.ld, per16), I.setp_and("eq", "u32", ok, t, 0, ok))
    if not whole_boxes(desc):                # clipped_map's base: D at the origin column
        em.put(I.binary("and", "b32", t, _reg(em, g.col), per16),
               I.setp_and("eq", "u32", ok, t, 0, ok))
    return ok


def d_map(em, g, ws_d: str, ok: str) -> None:
    """Thread 0, before the workgroup's first barrier: build D's tensor map (extents N x
    M, boxes of store_cols x STORE_ROWS, 128-byte swizzle; the copy engine clips what a
    box holds beyond M or N) where `ok` (_store_pred) holds, and release it to the
    tensor-map proxy; each storing lane acquires it (Store.open)."""
    desc = g.desc
    ga, _ = _d_slot(em, ws_d, desc)
    skip, base, pitch = label(em, "wg_dmap"), em.new("rd"), em.new("rd")
    em.put(I.bra(skip, guard=ok, negated=True), I.cvta("global", base, g.D.base, to=True))
    if isinstance(g.D.ld, int):
        em.put(I.mov("u64", pitch, g.D.ld * d_bytes(desc)))
    else:
        em.put(I.binary("mul.wide", "u32", pitch, g.D.ld, d_bytes(desc)))
    tma.build(em, ga, base, desc.result_type, g.N, g.M, pitch, STORE_ROWS, store_cols(desc))
    if not whole_boxes(desc):
        clipped_map(em, g, ws_d, base, pitch)
    em.put(I.fence_proxy_tensormap_release(), I.label(skip))


def clipped_map(em, g, ws_d: str, base: str, pitch: str) -> None:
    """D's second map where the epilogue's width w (box_n) holds no whole number of boxes:
    D from the origin column on, seen as tiles of w columns (tma.build_tiled_rows), so
    that the last box of an epilogue that lies wholly inside N is clipped at its w
    columns instead of writing its neighbour's. An epilogue that reaches past N (the last
    column of tiles) stores through the rank-2 map, which clips at N."""
    desc = g.desc
    w, size = box_n(desc), d_bytes(desc)
    ga, _ = _d_slot(em, ws_d, desc, 1)
    b3, off, left, tiles = em.new("rd"), em.new("rd"), em.new("r"), em.new("r")
    col = _reg(em, g.col)
    em.put(I.binary("mul.wide", "u32", off, col, size), I.binary("add", "s64", b3, base, off),
           I.binary("sub", "u32", left, g.N, col),   # an origin past N stores nothing, and
           I.binary("div", "u32", tiles, left, w))    # fewer than w columns: never used
    tma.build_tiled_rows(em, ga, b3, desc.result_type, w, tiles, g.M, w * size, pitch,
                         STORE_ROWS, store_cols(desc))


@dataclass
class Store:
    """A consumer warp's D store path (store_epilogue): `ok` the uniform predicate that D
    is a tensor map (_store_pred), `tmap` the map's generic address, `buf` the shared
    address of the warp's first box, `lead` lane 0 (it issues the warp's stores and owns
    their bulk async-groups), `nb` the boxes in rotation; where the epilogue's width holds
    no whole number of boxes, `clipped` clipped_map's generic address and `col0` the
    origin column its tiles count from (else None)."""
    ok: str
    tmap: str
    buf: str
    lead: str
    nb: int
    clipped: str | None = None
    col0: str | int | None = None

    @staticmethod
    def open(em, g, tid: str, ws_d) -> "Store | None":
        """The warp's Store, its lane 0 having acquired the map; None without the path
        (`ws_d`: (map workspace, B ring base, B ring bytes, _store_pred), from
        lower_native)."""
        if ws_d is None:
            return None
        ws, sb, ring_b, ok = ws_d
        desc = g.desc
        nb = store_buffers(desc)
        _, tmap = _d_slot(em, ws, desc)
        lead, buf, t = em.new("p"), em.new("r"), em.new("r")
        em.put(I.binary("and", "b32", t, tid, 31), I.setp("eq", "u32", lead, t, 0),
               I.binary("shr", "u32", t, tid, 5), I.binary("sub", "u32", t, t, 4),
               I.mad("lo", "u32", buf, t, nb * STORE_ROWS * ROW_BYTES, sb),
               I.binary("add", "u32", buf, buf, ring_b))
        both = em.new("p")
        em.put(I.binary("and", "pred", both, lead, ok),
               I.guarded(I.fence_proxy_tensormap_acquire(tmap, tma.MAP_BYTES), both))
        if whole_boxes(desc):
            return Store(ok, tmap, buf, lead, nb)
        clipped = em.new("rd")                 # slot 1: the next map (one window)
        em.put(I.binary("add", "s64", clipped, tmap, tma.MAP_BYTES),
               I.guarded(I.fence_proxy_tensormap_acquire(clipped, tma.MAP_BYTES), both))
        return Store(ok, tmap, buf, lead, nb, clipped, g.col)

    @staticmethod
    def close(em, store: "Store | None") -> None:
        """Lane 0 waits for its last stores, before the workgroup may exit."""
        if store is not None:
            em.put(I.guarded(I.cp_async_bulk_wait_group(0), store.lead))


def _consumer(em, g, elem: Elem, tid, wg, ring, share, fused, tiles=None,
              combine=None, ws_d=None) -> None:
    desc = g.desc
    nk, sa, sb, full, empty, S, a_bytes, b_bytes = ring
    bn, nb = desc.n, blocks(desc)
    em.put(I.setmaxnreg("inc", CONSUMER_REGS))
    accs = [[em.new("f") for _ in range(bn // 2)] for _ in range(nb)]   # 64 rows each
    one, p, leader = em.new("p"), em.new("p"), em.new("p")
    em.put(I.setp("eq", "u32", one, 0, 0))
    wtid = em.new("r")
    em.put(I.binary("and", "b32", wtid, tid, 127), I.setp("eq", "u32", leader, wtid, 0))
    peer = em.new("r") if share else None
    if share:
        em.put(I.mov("u32", peer, "%cluster_ctarank"), I.binary("xor", "b32", peer, peer, 1))
    # descriptor bases: this warpgroup's 64·nb A rows of stage 0, and B of stage 0
    a_row = em.new("r")
    em.put(I.binary("sub", "u32", a_row, wg, 1),
           I.mad("lo", "u32", a_row, a_row, 64 * nb * STAGE_ROW, sa))
    da0, db0 = ring_desc(em, a_row), ring_desc(em, sb)
    kb, s, ph = em.new("r"), em.new("r"), em.new("r")
    prev, have_prev = em.new("r"), em.new("p")
    em.put(I.mov("u32", s, 0), I.mov("u32", ph, 0))      # carried across tiles
    if elem.zero_prev:
        em.put(I.mov("u32", prev, 0))
    store = Store.open(em, g, tid, ws_d)
    g, close = _tile_loop(em, g, tiles, f"{elem.tag}_cons")
    em.put(*(I.mov("f32", r, "0f00000000") for acc in accs for r in acc))
    if g.kc:                   # stream-K: the unit's k1 - k0 chunks end at nk (no
        em.put(I.binary("sub", "u32", kb, nk, g.kc[1]),  # register more next to the
               I.binary("add", "u32", kb, kb, g.kc[0]))  # accumulators)
    else:
        em.put(I.mov("u32", kb, 0))
    em.put(I.setp("ne", "u32", have_prev, 0, 0))
    da, db, fb, soff = em.new("rd"), em.new("rd"), em.new("r"), em.new("rd")
    das = [da] + [em.new("rd") for _ in range(1, nb)]
    top, done = label(em, f"{elem.tag}_cons"), label(em, f"{elem.tag}_cons_done")
    em.put(I.label(top), I.setp("ge", "u32", p, kb, nk), I.bra(done, guard=p),
           I.mad("lo", "u32", fb, s, 8, full))
    for _ in k_steps(em, elem, desc, fb, ph, s, (da0, db0), (da, db), soff, a_bytes, b_bytes):
        for blk in range(1, nb):             # block blk: 64·blk rows further (>> 4)
            em.put(I.binary("add", "s64", das[blk], da, 64 * blk * STAGE_ROW >> 4))
        em.put(*(I.wgmma_mma_async(bn, "f32", desc.a_type, desc.b_type, acc, a, db, one)
                 for acc, a in zip(accs, das)))
    em.put(I.wgmma_commit_group(), I.wgmma_wait_group(1))  # the previous stage is read
    _release(em, have_prev, leader, prev, empty, share, peer)
    em.put(I.mov("u32", prev, s), I.setp("eq", "u32", have_prev, 0, 0))
    _advance(em, kb, s, ph, S)
    em.put(I.bra(top, uniform=True), I.label(done), I.wgmma_wait_group(0))
    _release(em, have_prev, leader, prev, empty, share, peer)
    skip = label(em, f"{elem.tag}_cons_part") if g.unit else None
    if skip:                                   # stream-K: only a tile's last part goes on
        assert nb == 1, "stream-K splits 128-row tiles only"
        streamk.fixup(em, tiles, g, accs[0], tid, skip)
    boxes = epilogue_boxes(desc.n, desc)
    for blk, acc in enumerate(accs):         # _epilogue's 64-row block number + 1: wg,
        rows = wg                            # or a tall tile's nb·(wg - 1) + blk + 1
        if nb > 1:
            rows = em.new("r")
            em.put(I.mad("lo", "u32", rows, wg, nb, blk + 1 - nb))
        _epilogue(em, g, wtid, rows, acc, fused, elem, combine, store=store,
                  first_box=blk * boxes)
    if skip:
        em.put(I.label(skip))
    close()
    Store.close(em, store)
    em.put(I.bar_warp_sync(-1), I.setmaxnreg("dec", ENTRY_REGS))


def k_steps(em, elem: Elem, desc, fb, ph, s, bases, descs, soff, a_bytes, b_bytes):
    """Wait for stage s's copies (its full barrier `fb`, parity `ph`), fence, then yield
    once per wgmma K step of the stage with descs = (A's, B's descriptor) at that step
    (`bases`: stage 0's)."""
    (da0, db0), (da, db) = bases, descs
    mb.wait(em, fb, ph)
    em.put(I.wgmma_fence(), I.binary("mul.wide", "u32", soff, s, a_bytes >> 4),
           I.binary("add", "s64", da, da0, soff),
           I.binary("mul.wide", "u32", soff, s, b_bytes >> 4),
           I.binary("add", "s64", db, db0, soff))
    for ks in range(elem.bk // I.WGMMA_K[desc.a_type]):
        if ks:
            em.put(I.binary("add", "s64", da, da, 2),     # 32 bytes further along K
                   I.binary("add", "s64", db, db, 2))
        yield ks


def _release(em, have_prev, leader, prev, empty, share, peer) -> None:
    """The leader frees the stage read before this one (if any): its own empty barrier,
    and the peer's when the pair shares B (the peer's producer multicasts into this
    workgroup too)."""
    pb, eb = em.new("p"), em.new("r")
    em.put(I.binary("and", "pred", pb, have_prev, leader),
           I.mad("lo", "u32", eb, prev, 8, empty), I.guarded(I.mbarrier_arrive(eb), pb))
    if share is True:                        # `cluster: 2`: always both
        rb = em.new("r")
        em.put(I.mapa(rb, eb, peer), I.guarded(I.mbarrier_arrive_cluster(rb), pb))
    elif share:
        both, rb = em.new("p"), em.new("r")
        em.put(I.binary("and", "pred", both, pb, share), I.mapa(rb, eb, peer),
               I.guarded(I.mbarrier_arrive_cluster(rb), both))


def _origin(em, g, wtid, wg) -> tuple[str, str]:
    """(global row of half 0, global column of pair 0) of this thread in its warpgroup's
    64 rows (wgmma layout, the same for every input format: lane l of warp w holds rows
    w*16 + l/4 (+8), columns 8j + 2(l%4) (+1))."""
    lane, warp, r0, c0 = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    em.put(I.binary("and", "b32", lane, wtid, 31), I.binary("shr", "u32", warp, wtid, 5),
           I.binary("sub", "u32", r0, wg, 1), I.binary("shl", "b32", r0, r0, 6),
           I.mad("lo", "u32", r0, warp, 16, r0))
    t = em.new("r")
    em.put(I.binary("shr", "u32", t, lane, 2), I.binary("add", "u32", r0, r0, t),
           I.binary("add", "u32", r0, r0, g.row),       # global row of half 0
           I.binary("and", "b32", c0, lane, 3), I.binary("shl", "b32", c0, c0, 1),
           I.binary("add", "u32", c0, c0, g.col))       # global column of pair 0
    return r0, c0


def _columns_left(em, g, c0: str) -> str:
    """The columns left from this lane's pair 0, at most the region's width: one register
    the pair predicates compare with immediates (a column register per pair was what
    ptxas kept live, and spilled, across the persistent tile loop)."""
    left, inside, wide = em.new("r"), em.new("p"), em.new("p")
    em.put(I.binary("sub", "u32", left, g.N, c0), I.setp("gt", "u32", inside, g.N, c0),
           I.selp("u32", left, left, 0, inside), I.setp("gt", "u32", wide, left, g.desc.n),
           I.selp("u32", left, g.desc.n, left, wide))
    return left


def _pair_preds(em, left: str):
    """cols(j) -> (both columns of pair j in range, only the first): c0 + 8j + 1 < N is
    8j + 1 < left. Made where they are used, so no predicate lives across a batch."""
    def cols(j: int) -> tuple[str, str]:
        pb, po = em.new("p"), em.new("p")
        em.put(I.setp("gt", "u32", pb, left, 8 * j + 1), I.setp("eq", "u32", po, left, 8 * j + 1))
        return pb, po
    return cols


def _half_row(em, g, r0: str, left: str, half: int):
    """(row, row < M, its pair predicates) of half `half` of this lane's rows (r0: half
    0's): a row past M has no columns left, so its pairs' predicates are false with no
    branch around them."""
    row, prow, row_left = em.new("r"), em.new("p"), em.new("r")
    em.put(I.binary("add", "u32", row, r0, 8 * half), I.setp("lt", "u32", prow, row, g.M),
           I.selp("u32", row_left, left, 0, prow))
    return row, prow, _pair_preds(em, row_left)


def _row_addr(em, out: str, row: str, c0: str, ld: str, base: str, shift: int) -> None:
    """out = base + (row * ld + c0) << shift: the address of element (row, c0) of a
    row-major matrix with `1 << shift`-byte elements."""
    em.put(I.binary("mul.wide", "u32", out, row, ld))
    w = em.new("rd")
    em.put(I.cvt("u64", "u32", w, c0), I.binary("add", "s64", out, out, w),
           I.binary("shl", "b64", out, out, shift), I.binary("add", "s64", out, out, base))


def _ld_reg(em, m) -> str:
    return _reg(em, m.ld)


def load_c(em, g, wtid, wg, acc) -> None:
    """acc = C for the in-range elements of this warpgroup's 64 rows, +0 elsewhere, so the
    main loop accumulates onto C and the epilogue adds none (PINGPONG_C_FIRST). Every pair
    of a half is loaded at once, straight into its accumulators: no register beyond them.
    A row past M has no columns left rather than a branch around its loads: with a branch
    between these definitions and the wgmma, ptxas 13.0 serialized every wgmma of the
    kernel (C7515, a WARPGROUP.DEPBAR after each HGMMA; tests/tensor/test_wgmma_pingpong.py)."""
    r0, c0 = _origin(em, g, wtid, wg)
    left = _columns_left(em, g, c0)
    cbase = em.new("rd")
    em.put(I.cvta("global", cbase, g.C.base, to=True))
    ldc = _ld_reg(em, g.C)
    pairs = g.desc.n // 8
    for half in (0, 1):
        mine = [(acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]) for j in range(pairs)]
        em.put(*(I.mov("b32", x, 0) for pair in mine for x in pair))
        row, _, cols = _half_row(em, g, r0, left, half)
        ca = em.new("rd")
        _row_addr(em, ca, row, c0, ldc, cbase, 2)
        for j, (x, y) in enumerate(mine):
            pb, po = cols(j)
            em.put(I.guarded(I.ld_vec(".global", "f32", I.vec(x, y), I.mem(ca, 32 * j)), pb),
                   I.ld(".global", "f32", x, I.mem(ca, 32 * j), guard=po))


def _epilogue(em, g, wtid, wg, acc, fused, elem: Elem = F16, combine=None,
              c_in_acc: bool = False, store: Store | None = None, first_box: int = 0) -> None:
    """D = C + acc (or `combine(em, acc, C)`; `c_in_acc`: acc already holds C + A·B, from
    load_c) for the in-range elements of this warpgroup's 64 rows (_origin's layout), then
    the fused epilogue (wgmma_epilogue.py) on those registers before D's rounding, in
    smaller batches (FUSED_BATCH). With a `store` (Store), through store_epilogue where D
    is a tensor map (`first_box`: the rotation's position at this call), else from the
    registers."""
    assert not (c_in_acc and combine), "a combined sum takes C in its epilogue"
    if store is not None:
        direct, end = label(em, f"{elem.tag}_epi_direct"), label(em, f"{elem.tag}_epi_end")
        em.put(I.bra(direct, guard=store.ok, negated=True, uniform=True))
        store_epilogue(em, g, wtid, wg, acc, fused, elem, combine, c_in_acc, store,
                       first_box)
        em.put(I.bra(end, uniform=True), I.label(direct))
        _epilogue(em, g, wtid, wg, acc, fused, elem, combine, c_in_acc)
        em.put(I.label(end))
        return
    desc = g.desc
    r0, c0 = _origin(em, g, wtid, wg)
    cbase, dbase = em.new("rd"), em.new("rd")
    if not c_in_acc:
        em.put(I.cvta("global", cbase, g.C.base, to=True))
    em.put(I.cvta("global", dbase, g.D.base, to=True))
    ldc = None if c_in_acc else _ld_reg(em, g.C)
    ldd = _ld_reg(em, g.D)
    rt = desc.result_type
    dshift = 2 if rt == "f32" else 1                       # log2 bytes of a D element
    bias = NativeBias(em, fused) if fused is not None and fused.bias is not None else None
    batch_size = epilogue_batch(desc, fused)
    cols = _pair_preds(em, _columns_left(em, g, c0))
    for half in (0, 1):
        row, prow = em.new("r"), em.new("p")
        em.put(I.binary("add", "u32", row, r0, 8 * half), I.setp("lt", "u32", prow, row, g.M))
        skip = label(em, f"{elem.tag}_epi_skip")
        em.put(I.bra(skip, guard=prow, negated=True))
        ca, da = em.new("rd"), em.new("rd")
        if not c_in_acc:
            _row_addr(em, ca, row, c0, ldc, cbase, 2)
        _row_addr(em, da, row, c0, ldd, dbase, dshift)
        if bias is not None:
            bias.start_half(em, row, c0)
        for _, j, x, y in _sums(em, acc, [(half, j) for j in range(desc.n // 8)], batch_size,
                                {half: ca}, {half: cols}, {half: bias}, fused, elem, combine,
                                c_in_acc):
            _store_pair(em, rt, *cols(j), I.mem(da, 8 * j << dshift), x, y)
        em.put(I.label(skip))


def store_epilogue(em, g, wtid, wg, acc, fused, elem: Elem, combine, c_in_acc: bool,
                   store: Store, first_box: int) -> None:
    """_epilogue's D through shared memory and the copy engine: each warp writes its 16
    rows (both halves of its lanes) one box of store_cols columns at a time into one of
    its `store.nb` boxes (128-byte swizzled rows: the 8 rows of a store instruction hit 8
    different 16-byte bank groups), and lane 0 stores the box with
    `cp.async.bulk.tensor` in a bulk async-group of its own; the copy engine clips rows
    past M and columns past N, so the stores carry no predicates. Before a box is written
    again, lane 0 waits until the group that read it last has read it
    (`wait_group.read nb - 1`: one group per box, every box in turn). C and the bias are
    read under the rows' and columns' predicates, no branch, a batch of at most a box at
    a time, the next batch's loads before this batch's sums (STORE_C_AHEAD), so one
    batch's round trip overlaps the previous batch's work."""
    desc = g.desc
    size, cols_box = d_bytes(desc), store_cols(desc)
    ppb, box_bytes = cols_box // 8, STORE_ROWS * ROW_BYTES
    r0, c0 = _origin(em, g, wtid, wg)
    # this lane's byte in a box (for the box's first pair): row l/4 (+8: 1024 bytes for
    # half 1), its pair at byte 2(l%4)·size of the row, the row's 16-byte chunks
    # swizzled by the row (chunk ^= row % 8); pair p of the box is P ^ (chunk of p << 4)
    lane, lr, q, t, P = (em.new("r") for _ in range(5))
    em.put(I.binary("and", "b32", lane, wtid, 31), I.binary("shr", "u32", lr, lane, 2),
           I.binary("and", "b32", q, lane, 3),
           I.binary("shl", "b32", q, q, (2 * size).bit_length() - 1),
           I.binary("shr", "u32", t, q, 4), I.binary("xor", "b32", t, t, lr),
           I.binary("shl", "b32", t, t, 4), I.binary("and", "b32", q, q, 15),
           I.binary("shl", "b32", P, lr, 7), I.binary("add", "u32", P, P, t),
           I.binary("add", "u32", P, P, q))
    wrow, inrow = em.new("r"), em.new("p")
    em.put(I.binary("sub", "u32", wrow, r0, lr), I.setp("lt", "u32", inrow, wrow, g.M))
    if not c_in_acc:
        cbase = em.new("rd")
        em.put(I.cvta("global", cbase, g.C.base, to=True))
        ldc = _ld_reg(em, g.C)
    left = _columns_left(em, g, c0)
    ca, cols, bias = {}, {}, {}
    for half in (0, 1):
        row, prow, cols[half] = _half_row(em, g, r0, left, half)
        if not c_in_acc:
            ca[half] = em.new("rd")
            _row_addr(em, ca[half], row, c0, ldc, cbase, 2)
        bias[half] = None
        if fused is not None and fused.bias is not None:
            bias[half] = NativeBias(em, fused)
            bias[half].start_half(em, row, c0, prow)
    batch_size = epilogue_batch(desc, fused)
    # at most a box per batch, the next batch's loads before this one's sums
    # (STORE_C_AHEAD): a round trip per box left the skinny-K epilogue latency-bound,
    # and batches of several boxes slowed the large-K shapes with C. Two batches are
    # then live at once, so each is at most half the calibrated batch (no spills).
    per_box = 2 * ppb
    nbox = epilogue_boxes(desc.n, desc)
    pairs = [range(box * ppb, min(box * ppb + ppb, desc.n // 8)) for box in range(nbox)]
    ahead = bool(STORE_C_AHEAD)
    sums = _sums(em, acc, [(h, j) for box in range(nbox) for h in (0, 1) for j in pairs[box]],
                 min(batch_size // 2 if ahead else batch_size, per_box), ca, cols, bias,
                 fused, elem, combine, c_in_acc, ahead=ahead)
    inside = _inside_tile(em, g, store)
    for box in range(nbox):
        k = (first_box + box) % store.nb
        src, at = em.new("r"), em.new("r")
        em.put(I.guarded(I.cp_async_bulk_wait_group(store.nb - 1, read=True), store.lead),
               I.bar_warp_sync(-1), I.binary("add", "u32", src, store.buf, k * box_bytes),
               I.binary("add", "u32", at, src, P))
        for _ in range(2 * len(pairs[box])):
            h, j, x, y = next(sums)
            chunk = (j - box * ppb) * 8 * size // 16
            a = at
            if chunk:
                a = em.new("r")
                em.put(I.binary("xor", "b32", a, at, chunk << 4))
            dst = I.mem(a, 1024 * h)
            if size == 4:
                em.put(I.st_vec(".shared", "f32", dst, I.vec(x, y)))
            else:
                w = em.new("r")
                em.put(I.cvt_pack(f"{desc.result_type}x2", w, y, x),   # x: column c
                       I.st(".shared", "b32", dst, w))
        col, go = em.new("r"), em.new("p")
        em.put(I.fence_proxy_async_shared(), I.bar_warp_sync(-1),
               I.binary("add", "u32", col, g.col, box * cols_box),
               I.setp_and("lt", "u32", go, col, g.N, inrow),
               I.binary("and", "pred", go, go, store.lead))
        if inside is None:
            em.put(I.guarded(I.cp_async_bulk_tensor_store(store.tmap, [col, wrow], src), go))
        else:                                # wholly inside N: clipped at the width
            whole, tile = inside
            go3, x = em.new("p"), em.new("r")
            em.put(I.binary("and", "pred", go3, go, whole),
                   I.binary("xor", "pred", go, go, go3), I.mov("u32", x, box * cols_box),
                   I.guarded(I.cp_async_bulk_tensor_store(store.clipped, [x, tile, wrow],
                                                          src), go3),
                   I.guarded(I.cp_async_bulk_tensor_store(store.tmap, [col, wrow], src), go))
        em.put(I.guarded(I.cp_async_bulk_commit_group(), store.lead))


def epilogue_batch(desc, fused) -> int:
    """C pairs an epilogue batch loads before their D stores: EPILOGUE_BATCH, or
    FUSED_BATCH's for a fused epilogue; a tall tile's are smaller, since the other
    block's accumulators stay live through each block's epilogue (a half, a quarter
    with a bias matrix: what ptxas 13.0 fits in the consumers' registers without spills,
    but for a column-major bias matrix with a 16-bit D, docs/reference/gemm.md "Tall
    tiles")."""
    if fused is None:
        return EPILOGUE_BATCH // blocks(desc)
    mode = fused.desc.bias_mode
    return max(1, FUSED_BATCH[mode] // blocks(desc) ** (2 if mode == "matrix" else 1))


def _inside_tile(em, g, store: Store):
    """With clipped_map: (the epilogue's columns all lie below N, its tile's index in the
    map), both uniform; None without it."""
    if store.clipped is None:
        return None
    w = g.desc.n
    whole, end, tile = em.new("p"), em.new("r"), em.new("r")
    em.put(I.binary("add", "u32", end, g.col, w), I.setp("le", "u32", whole, end, g.N),
           I.binary("sub", "u32", tile, g.col, store.col0),
           I.binary("div", "u32", tile, tile, w))
    return whole, tile


def _sums(em, acc, items, batch_size: int, ca, cols, bias, fused, elem: Elem, combine,
          c_in_acc: bool, ahead: bool = False):
    """Yield (half, j, x, y) for each (half, j) of `items` once pair j's accumulators x, y
    of that half hold D's f32 values: C (at ca[half], under the pair predicates
    cols[half]) added or combined, then the fused epilogue (bias[half]: a NativeBias
    started on that half, or None). C and bias loads go in batches of `batch_size` pairs
    before their sums; `ahead`: the next batch's loads go before this batch's sums too,
    so one batch's round trip overlaps the previous batch's sums and stores."""
    items = list(items)
    batches = [items[b0:b0 + batch_size] for b0 in range(0, len(items), batch_size)]

    def load(batch):
        # all C (and bias) loads of a batch before its D stores: C may alias D, so
        # ptxas keeps a load after an earlier store, and one pair per round trip
        # would leave the whole epilogue latency-bound
        cv, bv = {}, {}
        for h, j in batch:
            bh = bias[h]
            if c_in_acc:
                pb, po = cols[h](j) if bh is not None and bh.per_pair else (None, None)
            else:
                u, v = cv[h, j] = em.new("f"), em.new("f")
                # defined on every path: a predicated load alone keeps the register's
                # old value, which in a tile loop is live across the loop (ptxas
                # spilled)
                zero = (I.mov("b32", u, 0), I.mov("b32", v, 0))
                if not elem.c_after_preds:
                    em.put(*zero)
                pb, po = cols[h](j)
                if elem.c_after_preds:
                    em.put(*zero)
                em.put(I.guarded(I.ld_vec(".global", "f32", I.vec(u, v),
                                          I.mem(ca[h], 32 * j)), pb),
                       I.ld(".global", "f32", u, I.mem(ca[h], 32 * j), guard=po))
            if bh is not None and bh.per_pair:
                first = em.new("p")
                em.put(I.binary("or", "pred", first, pb, po))
                bv[h, j] = bh.load_pair(em, j, first, pb)
        return cv, bv

    loaded = load(batches[0]) if ahead and batches else None
    for i, batch in enumerate(batches):
        if ahead:
            cv, bv = loaded
            if i + 1 < len(batches):
                loaded = load(batches[i + 1])
        else:
            cv, bv = load(batch)
        for h, j in batch:
            x, y = acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]
            if not c_in_acc:
                u, v = cv[h, j]
                if combine is None:
                    em.put(I.binary("add", "f32", x, x, u), I.binary("add", "f32", y, y, v))
                else:
                    combine(em, x, u)
                    combine(em, y, v)
            if fused is not None:
                bh = bias[h]
                bx, by = bh.scaled(em, bv.get((h, j))) if bh is not None else (None,) * 2
                fused.apply(em, x, None if bx is None else (lambda b=bx: b))
                fused.apply(em, y, None if by is None else (lambda b=by: b))
            yield h, j, x, y


def _store_pair(em, rt: str, pb: str, po: str, addr, x: str, y: str) -> None:
    """D[c], D[c+1] = x, y at `addr` (an ops.mem operand; both when `pb`, only the first
    when `po`), rounded once to an f16/bf16 result (cvt.rn, like the replay's store)."""
    if rt == "f32":
        em.put(I.guarded(I.st_vec(".global", "f32", addr, I.vec(x, y)), pb),
               I.guarded(I.st(".global", "f32", addr, x), po))
        return
    w, h = em.new("r"), em.new("rs")
    em.put(I.cvt_pack(f"{rt}x2", w, y, x),                  # x in the low half: column c
           I.guarded(I.st(".global", "b32", addr, w), pb), I.cvt(rt, "f32", h, x, "rn"),
           I.guarded(I.st(".global", "b16", addr, h), po))


def _reg(em, v: str | int) -> str:
    """`v` as a register: itself, or a constant moved into a fresh one."""
    return v if isinstance(v, str) else _imm(em, v)


def _imm(em, v: int) -> str:
    r = em.new("r")
    em.put(I.mov("u32", r, v))
    return r
