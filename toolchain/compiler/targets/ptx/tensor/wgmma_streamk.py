"""Stream-K for the cooperative sm_90a GEMM pipeline (`workspace:` on a persistent
workgroup tensor_matmul, docs/reference/gemm.md "Stream-K").

T tiles over W workgroups leave a last round of r = T mod W tiles on r workgroups while
the others idle (480 tiles of 128x256 on 132 multiprocessors: 3.64 rounds take 4). Here
each of those r tiles is cut along K into s parts (plan(): up to 8), and the r·s parts join the
grid-strided sequence (wgmma_persistent.Tiles.split_k), so the last round takes about
1/s of a tile's time instead of a whole one.

The parts of a tile meet in the workspace, one consumer warp at a time (each warp owns
16 rows of the tile's accumulators and its epilogue, so no warp waits for another): every
part's warp stores its partial sums in its own slot, releases them and counts itself in
the warp's counter; the warp that counts last reads all s partials back in part order
(so the sum is the same whichever part finishes last: the result is deterministic),
resets the counter for the next launch, and runs the epilogue with the sum. Nobody waits
for anybody, so nothing depends on which workgroups are resident at once.

The workspace (workspace_bytes): 8 u32 counters per workgroup of the grid, rounded up to
256 bytes, then 2 tile slots of f32 partial sums per workgroup (plan() keeps r·s at most
2W). In clusters of 2 the units are parts of pair tiles over the clusters (W/2 of them),
and rank r of a cluster keeps its half tile in slot 2u + r and counts in the counters of
2q + r, so the same bytes suffice. It must be zero when first used and is left zero;
launches that may run at the same time need their own. A null or misaligned workspace, or a
grid of 65536 or more workgroups, turns the split off (s = 1): the tiles then run whole, as
without it.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as I
from .common import label

PARTS = (2, 3, 4, 6, 8)                   # the parts a tile may be cut into, beyond 1
MAX_PARTS = PARTS[-1]
SLOTS_PER_WORKGROUP = 2                   # r·s <= 2W parts: slots of partial sums
COUNTERS_PER_WORKGROUP = 8                # one per consumer warp of a tile (r < W tiles)
WARPS = 8                                 # consumer warps of a cooperative 128-row tile


def counter_bytes(grid: int) -> int:
    return -(-COUNTERS_PER_WORKGROUP * 4 * grid // 256) * 256


def workspace_bytes(desc, grid: int) -> int:
    """The bytes a launch of `grid` workgroups needs behind `workspace:`."""
    return counter_bytes(grid) + SLOTS_PER_WORKGROUP * grid * desc.m * desc.n * 4


@dataclass
class Plan:
    """A split_k loop's run-time plan (u32 registers): `whole` the tiles of the whole
    rounds, `r` the last round's tiles, `s` the parts per tile (1: no split), `nk` the K
    chunks of a tile, `w` the workgroups."""
    whole: str
    r: str
    s: str
    nk: str
    w: str


def plan(em, tiles) -> Plan:
    """s minimises the last round's time ceil(r·s / W) / s (in tiles), the
    smallest such s of 1 and PARTS, with s <= nk (no empty part) and r·s <= 2W (the
    workspace's slots); 1 when the workspace is null or not 16-byte aligned, or W >=
    65536 (then every product here fits 32 bits), and (wgmma.STREAM_K 1, the default)
    when whole rounds come first."""
    from . import wgmma                         # its knob (wgmma imports this module)
    total, w, nk = tiles.counts(em)
    r, whole, s, t = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    ok, p = em.new("p"), em.new("p")
    em.put(I.binary("rem", "u32", r, total, w), I.binary("sub", "u32", whole, total, r),
           I.mov("u32", s, 1), I.setp("ne", "u64", ok, tiles.work, 0),
           I.cvt("u32", "u64", t, tiles.work), I.binary("and", "b32", t, t, 15),
           I.setp_and("eq", "u32", ok, t, 0, ok), I.setp_and("lt", "u32", ok, w, 65536, ok))
    if wgmma.STREAM_K < 2:                      # only a launch of one (partial) round
        em.put(I.setp_and("eq", "u32", ok, whole, 0, ok))
    cur, new, lim = em.new("r"), em.new("r"), em.new("r")
    em.put(I.binary("shl", "b32", lim, w, 1))
    for c in PARTS:
        # ceil(r·x / W) = (r·x + W - 1) / W
        em.put(I.mad("lo", "u32", cur, r, s, w), I.binary("sub", "u32", cur, cur, 1),
               I.binary("div", "u32", cur, cur, w), I.binary("mul.lo", "u32", cur, cur, c),
               I.mad("lo", "u32", new, r, c, w), I.binary("sub", "u32", new, new, 1),
               I.binary("div", "u32", new, new, w), I.binary("mul.lo", "u32", new, new, s),
               I.setp_and("lt", "u32", p, new, cur, ok), I.binary("mul.lo", "u32", t, r, c),
               I.setp_and("le", "u32", p, t, lim, p), I.setp_and("ge", "u32", p, nk, c, p),
               I.selp("u32", s, c, s, p))
    return Plan(whole, r, s, nk, w)


def prefer_split(em, tiles, rule: str) -> None:
    """`schedule: auto` with a workspace: clear `rule` (ping-pong) when every tile is in
    the last round (fewer tiles than workgroups) and the plan splits them: the split
    then runs each tile on 2 to 8 multiprocessors, worth more than ping-pong's overlap
    (which the split does not have: wgmma_pingpong runs whole tiles)."""
    pl = plan(em, tiles)
    one = em.new("p")
    em.put(I.setp("eq", "u32", one, pl.whole, 0), I.setp_and("gt", "u32", one, pl.s, 1, one),
           I.binary("and", "pred", one, one, rule), I.binary("xor", "pred", rule, rule, one))


def fixup(em, tiles, g, acc: list[str], tid: str, skip: str) -> None:
    """After a unit's K loop, in each consumer warp (`acc`: its accumulators, wgmma's
    m64nN fragment; `tid`: the workgroup's linear id): a part of a split tile stores its
    partial sums and counts itself; the last part sums every part into `acc` and falls
    through to the epilogue, the others branch to `skip` (the next unit). Whole tiles
    fall through untouched."""
    desc = g.desc
    assert desc.m == 128 and len(acc) == desc.n // 2
    tile_bytes, warp_bytes = desc.m * desc.n * 4, desc.m * desc.n * 4 // WARPS
    ranks = 2 if tiles.pair else 1             # workgroups a unit spans (cluster: 2)
    pl = plan(em, tiles)
    whole = label(em, "sk_whole")
    sk = em.new("p")
    em.put(I.setp("ge", "u32", sk, g.unit, pl.whole),
           I.setp_and("gt", "u32", sk, pl.s, 1, sk), I.bra(whole, guard=sk, negated=True,
                                                         uniform=True))
    u, q, warp, t = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    work, base, at, ctr = em.new("rd"), em.new("rd"), em.new("rd"), em.new("rd")
    em.put(I.cvta("global", work, tiles.work, to=True),
           I.binary("sub", "u32", u, g.unit, pl.whole), I.binary("div", "u32", q, u, pl.s))
    if ranks > 1:
        # paired: unit u's slot and tile q's counters for rank r are 2u + r and 2q + r
        rank = em.new("r")
        em.put(I.mov("u32", rank, "%cluster_ctarank"), I.mad("lo", "u32", u, u, 2, rank),
               I.mad("lo", "u32", q, q, 2, rank))
    em.put(I.binary("shr", "u32", warp, tid, 5), I.binary("sub", "u32", warp, warp, 4),
           # the slots follow the counters: 8 u32 per workgroup, rounded up to 256 bytes
           I.binary("mul.lo", "u32", t, pl.w, ranks * COUNTERS_PER_WORKGROUP * 4),
           I.binary("add", "u32", t, t, 255), I.binary("and", "b32", t, t, -256),
           I.cvt("u64", "u32", base, t), I.binary("add", "s64", base, base, work),
           I.mad("wide", "u32", base, warp, warp_bytes, base),
           I.binary("and", "b32", t, tid, 31), I.mad("wide", "u32", base, t, 16, base),
           I.mad("wide", "u32", at, u, tile_bytes, base))
    quads = [acc[j:j + 4] for j in range(0, len(acc), 4)]
    for j, quad in enumerate(quads):           # lane-interleaved: 512 bytes per quad
        em.put(I.st_vec(".global", "f32", I.mem(at, 512 * j), I.vec(*quad)))
    lead, last, old, v = em.new("p"), em.new("p"), em.new("r"), em.new("r")
    em.put(I.fence("acq_rel", "gpu"), I.bar_warp_sync(-1),
           I.binary("and", "b32", t, tid, 31), I.setp("eq", "u32", lead, t, 0),
           I.mad("lo", "u32", t, q, WARPS, warp), I.mad("wide", "u32", ctr, t, 4, work),
           I.mov("u32", old, 0),
           I.guarded(I.atom("acq_rel", "gpu", "global", "add", "u32", old, I.mem(ctr), 1),
                     lead),
           I.binary("add", "u32", old, old, 1), I.setp("eq", "u32", last, old, pl.s),
           I.binary("and", "pred", last, last, lead),
           I.guarded(I.st(".global", "u32", I.mem(ctr), 0), last),   # for the next launch
           I.selp("u32", v, 1, 0, last), I.shfl_idx(v, v, 0),
           I.setp("eq", "u32", last, v, 0), I.bra(skip, guard=last, uniform=True),
           I.fence("acq_rel", "gpu"))
    if ranks > 1:                              # part 0 of pair tile q/2: slot 2·(q/2)·s + r
        em.put(I.binary("sub", "u32", t, q, rank), I.binary("mul.lo", "u32", t, t, pl.s),
               I.binary("add", "u32", t, t, rank))
    else:                                      # part 0 of tile q: slot q·s
        em.put(I.binary("mul.lo", "u32", t, q, pl.s))
    em.put(I.mad("wide", "u32", at, t, tile_bytes, base))
    _sum_parts(em, pl, quads, at, ranks * tile_bytes)
    em.put(I.label(whole))


def _sum_parts(em, pl: Plan, quads, at: str, stride: int) -> None:
    """acc = part 0 + part 1 + ... + part s-1, in that order (`at`: part 0's slot,
    `stride`: bytes from one part's slot to the next's; the loads bypass L1, which is not
    kept coherent with other multiprocessors' stores)."""
    for j, quad in enumerate(quads):
        em.put(I.ld_vec(".global", "f32", I.vec(*quad), I.mem(at, 512 * j), cache="cg"))
    left, p = em.new("r"), em.new("p")
    top, done = label(em, "sk_sum"), label(em, "sk_summed")
    tmp = [em.new("f") for _ in range(2)]     # pairs: two registers fewer beside acc
    em.put(I.binary("sub", "u32", left, pl.s, 1), I.label(top),
           I.setp("eq", "u32", p, left, 0), I.bra(done, guard=p, uniform=True),
           I.binary("add", "s64", at, at, stride))
    for j, quad in enumerate(quads):
        for h in range(2):
            em.put(I.ld_vec(".global", "f32", I.vec(*tmp), I.mem(at, 512 * j + 8 * h),
                            cache="cg"),
                   *(I.float_rn("add", "f32", a, a, x)
                     for a, x in zip(quad[2 * h:2 * h + 2], tmp)))
    em.put(I.binary("sub", "u32", left, left, 1), I.bra(top, uniform=True), I.label(done))
