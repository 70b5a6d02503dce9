"""The ping-pong schedule of the sm_90a workgroup GEMM (`schedule: pingpong`,
docs/reference/gemm.md "Ping-pong schedule"): wgmma.py's ring, maps, barriers, epilogue and
tile loop, with the two consumer warpgroups working on different half tiles in turn.

Every desc.m x desc.n tile of the (persistent) tile sequence is cut into two column halves
of desc.m x desc.n/2. Consumer warpgroup h (0 or 1) computes half h of each of the
workgroup's tiles on its own: all 128 rows, as two m64n(n/2) wgmma per K step (rows 0-63
and 64-127 of the A stage against the same B stage), n/2 f32 accumulators a thread — the
cooperative schedule's count, so the 232-register consumer budget is unchanged. The
producer streams, per tile, half 0's nk K chunks and then half 1's through the ring (A box
desc.m rows, B box n/2 rows), so ring position (2i + h)·nk + kb holds K chunk kb of half h
of the workgroup's tile i: consumer h starts at position h·nk and skips the other half's nk
positions after each of its tiles. A stage has one reader: its empty barrier expects one
arrival.

Two turn mbarriers (128 arrivals: every thread of the handing warpgroup) order the main
loops: consumer 0 runs tile i's K loop once consumer 1 has issued its K loop of tile i-1
(turn barrier 0; the first passes at once, parity 1 of a fresh barrier), consumer 1 runs
tile i's once consumer 0 has issued its own (turn barrier 1). Each hands the turn over right
after issuing its last stage's wgmma (one group still in flight), then drains, releases the
last stage and runs its epilogue, C load and D store, while the other warpgroup's wgmma keep
the tensor cores busy.

Why no wait is ever answered by a stale phase (mbarrier parity is only modulo 2): a
consumer takes its turn only after the other has passed the full-barrier waits of every
earlier ring position, so when it waits for position p's fill, the fill of p - S has
completed (its own earlier position, or one the other consumer has waited for), and fill
p + S cannot happen before it releases p; the turn barriers themselves never run more than
one phase ahead of their waiter (the hand-over chain alternates). Both consumers run the
same tile loop, so they take the same number of turns: the last hand-over is simply never
waited for, which is harmless for an mbarrier (invalidated at the end). The ring protocol
with these turns is modelled on random schedules in tests/tensor/test_wgmma_ring_model.py.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ops as I
from . import mbarrier as mb
from . import tma
from . import wgmma as W
from .common import label
from .wgmma_persistent import tile_loop as _tile_loop

TURN_ARRIVALS = 128                          # every thread of the handing warpgroup


def _turn(empty: str, S: int, i: int) -> str:
    """Turn barrier i: after the S empty barriers (wgmma.shared_bytes counts 16 bytes)."""
    return f"{empty}+{8 * S + 8 * i}"


def init_turns(em, empty: str, S: int) -> None:
    for i in (0, 1):
        mb.init(em, _turn(empty, S, i), TURN_ARRIVALS)


def inval_turns(em, empty: str, S: int) -> None:
    for i in (0, 1):
        mb.inval(em, _turn(empty, S, i))


def producer(em, g, elem, tid, ring, ws, tiles, share=None) -> None:
    """One thread: per tile, half 0's K chunks, then half 1's (B columns n/2 further).
    Paired (`cluster: 2`, share True): each half tile's B box arrives as two boxes
    (wgmma.b_halves: quarters, or 64 and 56 rows at 240), this workgroup's multicast to
    both (wgmma.load_b)."""
    desc = g.desc
    nk, sa, sb, full, empty, S, a_bytes, b_bytes = ring
    half, tag = desc.n // 2, elem.tag
    done, p = label(em, f"{tag}_pp_prod_done"), em.new("p")
    em.put(I.setmaxnreg("dec", W.PRODUCER_REGS), I.setp("ne", "u32", p, tid, 0),
           I.bra(done, guard=p))
    b_rows = rows = half
    if share:                                # two boxes a half tile (wgmma.b_halves)
        b_rows, rows = W.paired_b_box(em, desc, share)
    slot_a, slot_b = W._maps(em, g, elem, ws, rows)
    kb, s, ph, k0 = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    dst_a, dst_b, fb, eb = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    col_h, h = em.new("r"), em.new("r")
    em.put(I.mov("u32", s, 0),                       # the ring's position: carried across
           I.mov("u32", ph, 1))                      # tiles (first pass: empty is free)
    g, close = _tile_loop(em, g, tiles, f"{tag}_pp_prod")
    pair = W.pair_regs(em) if share else None
    halves = label(em, f"{tag}_pp_prod_half")
    top, half_done = label(em, f"{tag}_pp_prod"), label(em, f"{tag}_pp_prod_half_done")
    em.put(I.mov("u32", col_h, g.col), I.mov("u32", h, 0), I.label(halves),
           I.mov("u32", kb, 0), I.mov("u32", k0, 0), I.label(top),
           I.setp("ge", "u32", p, kb, nk), I.bra(half_done, guard=p),
           I.mad("lo", "u32", eb, s, 8, empty))
    mb.wait(em, eb, ph, cluster=share is not None)
    em.put(I.mad("lo", "u32", fb, s, 8, full))
    mb.arrive_expect_tx(em, fb, a_bytes + b_bytes)
    em.put(I.mad("lo", "u32", dst_a, s, a_bytes, sa), I.mad("lo", "u32", dst_b, s, b_bytes, sb))
    tma.load_2d(em, dst_a, slot_a, k0, g.row, fb)
    W.load_b(em, share, pair, dst_b, slot_b, k0, col_h, fb, b_rows)
    W._advance(em, kb, s, ph, S)
    em.put(I.binary("add", "u32", k0, k0, elem.bk), I.bra(top, uniform=True),
           I.label(half_done), I.binary("add", "u32", col_h, col_h, half),
           I.binary("add", "u32", h, h, 1), I.setp("lt", "u32", p, h, 2),
           I.bra(halves, guard=p))
    close()
    em.put(I.label(done), I.bar_warp_sync(-1))


def _skip(em, s: str, ph: str, r: str, q_odd: str, S: int) -> None:
    """Move the ring position (s, ph) on by nk = q·S + r positions (r < S, q_odd = q & 1):
    the other consumer's half tile."""
    w = em.new("p")
    em.put(I.binary("add", "u32", s, s, r), I.setp("ge", "u32", w, s, S),
           I.guarded(I.binary("sub", "u32", s, s, S), w),
           I.guarded(I.binary("xor", "b32", ph, ph, 1), w),
           I.binary("xor", "b32", ph, ph, q_odd))


def consumer(em, g, elem, tid, wg, ring, fused, tiles, combine, share=None,
             ws_d=None) -> None:
    """Consumer warpgroup wg - 1: its half of each tile, main loops in turn with the other;
    paired (`cluster: 2`), each stage is released on both workgroups' empty barriers;
    `ws_d`: D's store path (wgmma.Store.open)."""
    desc = g.desc
    nk, sa, sb, full, empty, S, a_bytes, b_bytes = ring
    half = desc.n // 2
    em.put(I.setmaxnreg("inc", W.CONSUMER_REGS))
    acc = [[em.new("f") for _ in range(half // 2)] for _ in (0, 1)]   # rows 0-63, 64-127
    one, p, leader, first = em.new("p"), em.new("p"), em.new("p"), em.new("p")
    em.put(I.setp("eq", "u32", one, 0, 0))
    wtid, h = em.new("r"), em.new("r")
    em.put(I.binary("and", "b32", wtid, tid, 127), I.setp("eq", "u32", leader, wtid, 0),
           I.binary("sub", "u32", h, wg, 1), I.setp("eq", "u32", first, h, 0))
    peer = em.new("r") if share else None
    if share:
        em.put(I.mov("u32", peer, "%cluster_ctarank"), I.binary("xor", "b32", peer, peer, 1))
    da0, db0 = W.ring_desc(em, sa), W.ring_desc(em, sb)
    # the ring position: consumer 1 starts after consumer 0's first half tile
    kb, s, ph, r, q_odd = (em.new("r") for _ in range(5))
    prev, have_prev = em.new("r"), em.new("p")
    em.put(I.binary("rem", "u32", r, nk, S), I.binary("div", "u32", q_odd, nk, S),
           I.binary("and", "b32", q_odd, q_odd, 1), I.selp("u32", s, 0, r, first),
           I.selp("u32", ph, 0, q_odd, first), I.mov("u32", prev, 0))
    # turns: wait on barrier h (parity 1 first for consumer 0: it starts), hand over on 1 - h
    mine, other, tp, t0 = em.new("r"), em.new("r"), em.new("r"), em.new("r")
    em.put(I.binary("add", "u32", t0, empty, 8 * S), I.mad("lo", "u32", mine, h, 8, t0),
           I.binary("xor", "b32", other, h, 1), I.mad("lo", "u32", other, other, 8, t0),
           I.selp("u32", tp, 1, 0, first))
    c_first = W.PINGPONG_C_FIRST and combine is None and elem.knobs
    store = W.Store.open(em, g, tid, ws_d)
    g, close = _tile_loop(em, g, tiles, f"{elem.tag}_pp_cons")
    if c_first:                              # C's loads fly while the other has its turn
        load_c(em, g, wtid, h, acc)
    else:
        for a in acc:
            em.put(*(I.mov("f32", x, "0f00000000") for x in a))
    mb.wait(em, mine, tp)
    em.put(I.binary("xor", "b32", tp, tp, 1),
           I.mov("u32", kb, 0), I.setp("ne", "u32", have_prev, 0, 0))
    da, db, fb, soff, da1 = em.new("rd"), em.new("rd"), em.new("r"), em.new("rd"), em.new("rd")
    top, done = label(em, f"{elem.tag}_pp_cons"), label(em, f"{elem.tag}_pp_cons_done")
    em.put(I.label(top), I.setp("ge", "u32", p, kb, nk), I.bra(done, guard=p),
           I.mad("lo", "u32", fb, s, 8, full))
    for _ in W.k_steps(em, elem, desc, fb, ph, s, (da0, db0), (da, db), soff, a_bytes,
                       b_bytes):
        # rows 64-127 of the stage's A: 64 rows of STAGE_ROW bytes further (>> 4)
        em.put(I.binary("add", "s64", da1, da, 64 * W.STAGE_ROW >> 4))
        em.put(I.wgmma_mma_async(half, "f32", desc.a_type, desc.b_type, acc[0], da, db, one),
               I.wgmma_mma_async(half, "f32", desc.a_type, desc.b_type, acc[1], da1, db,
                                 one))
    em.put(I.wgmma_commit_group(), I.wgmma_wait_group(1))  # the previous stage is read
    W._release(em, have_prev, leader, prev, empty, share, peer)
    em.put(I.mov("u32", prev, s), I.setp("eq", "u32", have_prev, 0, 0))
    W._advance(em, kb, s, ph, S)
    em.put(I.bra(top, uniform=True), I.label(done))
    mb.arrive(em, other)                     # every thread: the K loop is issued
    em.put(I.wgmma_wait_group(0))
    W._release(em, have_prev, leader, prev, empty, share, peer)
    epilogue(em, g, wtid, h, acc, fused, elem, combine, c_first, store)
    _skip(em, s, ph, r, q_odd, S)
    close()
    W.Store.close(em, store)
    em.put(I.bar_warp_sync(-1), I.setmaxnreg("dec", W.ENTRY_REGS))


def _half(em, g, h: str):
    """g narrowed to half h (a register, 0 or 1) of its tile: columns g.col + h·n/2 .. + n/2."""
    half = g.desc.n // 2
    col_h = em.new("r")
    em.put(I.mad("lo", "u32", col_h, h, half, g.col))
    return replace(g, desc=replace(g.desc, n=half), col=col_h)


def _blocks(em):
    """The two 64-row blocks of a half (acc[0], acc[1]), as _epilogue's row block + 1 (its
    "wg")."""
    for blk in (0, 1):
        rows = em.new("r")
        em.put(I.mov("u32", rows, blk + 1))
        yield blk, rows


def load_c(em, g, wtid, h: str, acc) -> None:
    """acc = C of half h of the tile at g's origin (wgmma.load_c per 64-row block)."""
    gh = _half(em, g, h)
    for blk, rows in _blocks(em):
        W.load_c(em, gh, wtid, rows, acc[blk])


def epilogue(em, g, wtid, h: str, acc, fused, elem, combine, c_in_acc=False,
             store=None) -> None:
    """wgmma._epilogue for half h (a register, 0 or 1) of the tile at g's origin: columns
    g.col + h·n/2 .. + n/2, rows 64·blk .. + 64 from acc[blk] (the m64n(n/2) layout);
    with a `store`, block 1's boxes continue block 0's rotation."""
    gh = _half(em, g, h)
    boxes = W.epilogue_boxes(gh.desc.n, gh.desc)
    for blk, rows in _blocks(em):
        W._epilogue(em, gh, wtid, rows, acc[blk], fused, elem, combine, c_in_acc, store,
                    blk * boxes)
