"""The tile sequence of a persistent workgroup tensor.matmul (`persistent: G`,
docs/reference/gemm.md "Persistent tile loop"): the area from the origin (row, column) to
(M, N) is cut into desc.m x desc.n tiles, numbered in groups of G row tiles (within a group,
down the rows first, then across the columns: the group's A rows stay in L2 while it sweeps
B), and workgroup w of W (linear ids over the whole grid) computes tiles w, w + W, w + 2W, ...

Clusters of 2 (`cluster: 2`, Tiles(pair=True)): the tiles are numbered as if they were
2·desc.m rows tall (pair tiles, in groups of ceil(G / 2) of them: the same rows of A per
group), cluster c of C = W / 2 (workgroups 2c and 2c + 1, ranks 0 and 1) takes pair tiles
c, c + C, ..., and rank r computes the desc.m rows r·desc.m further: the two tiles of a
cluster always share their B columns. Rank 1's tile of the last pair row may start at or
beyond M: its copies are zero-filled and its epilogue stores nothing (every row is out of
range), so both workgroups still run the same sequence of tiles and K chunks.

Stream-K (Tiles.split_k, the cooperative pipeline with a `workspace:`): with T tiles
over W workgroups, the T - r tiles of the whole rounds (r = T mod W) run as above, and
each of the last round's r tiles is split along K into s parts (s <= 8 chosen at run time,
wgmma_streamk.plan), so the r·s parts spread over the idle workgroups: unit t >= T - r is
part i = (t - (T - r)) mod s of tile T - r + (t - (T - r)) / s, K chunks [i·nk/s,
(i+1)·nk/s). Paired (`cluster: 2`), the tiles and the rounds are the pair tiles over
the clusters: both workgroups of a cluster run each unit's K chunks together (B's boxes
still multicast), and each keeps its own half tile's partial sums.

Tile arithmetic is in u64: tiles_m * tiles_n and G * tiles_n may exceed 32 bits for
extreme M and N, and a wrapped count would skip or repeat tiles. It runs once per tile.
"""
from __future__ import annotations

from copy import copy
from dataclasses import replace

from .. import ops as I
from . import wgmma_streamk as streamk
from .common import label


class Tiles:
    """The tile loop of one persistent region. Only the tile counter lives across the loop:
    the counts and the grid stride are recomputed from M, N, the origin and the special
    registers wherever they are needed (a few divisions per tile are nothing against a
    tile's K loop, and the pipeline's consumers have no registers to spare next to their
    accumulators). `wide`: u64 arithmetic (the split path: exact for every M, N and
    grid); otherwise u32, which the pipeline uses because ptxas makes a 64-bit division a
    call whose saved registers spill next to the accumulators: its run-time predicate
    then requires fits_u32 (else the split path runs, exact)."""

    def __init__(self, em, desc, row: str, col: str, M: str, N: str, wide: bool = True,
                 pair: bool = False):
        self.own, self.pair = desc, pair
        self.desc = replace(desc, m=2 * desc.m, persistent=(desc.persistent + 1) // 2) \
            if pair else desc                # the pair tiles a cluster steps over
        self.row0, self.col0, self.M, self.N = row, col, M, N
        self.t, self.c = ("u64", "rd") if wide else ("u32", "r")
        self.work = self.K = self.bk = None  # stream-K (split_k): off

    def split_k(self, work: str, K: str, bk: int) -> "Tiles":
        """This (u32) loop with the last round's tiles split along K through the
        workspace at `work` (K: the region's K, bk: elements per K chunk); paired, the
        units are pair tiles' parts, which both workgroups of a cluster run together."""
        assert self.c == "r"
        out = copy(self)
        out.work, out.K, out.bk = work, K, bk
        return out

    def _count(self, em, origin: str, bound: str, size: int) -> str:
        """ceil((bound - origin) / size), 0 when origin >= bound (no overflow: the
        remaining extent minus one is divided)."""
        left, p = em.new("r"), em.new("p")
        em.put(I.binary("sub", "u32", left, bound, origin), I.setp("gt", "u32", p, bound, origin),
               I.binary("add", "u32", left, left, -1), I.binary("div", "u32", left, left, size),
               I.binary("add", "u32", left, left, 1), I.selp("u32", left, left, 0, p))
        if self.c == "r":
            return left
        out = em.new("rd")
        em.put(I.cvt("u64", "u32", out, left))
        return out

    def _counts(self, em) -> tuple[str, str]:
        return (self._count(em, self.row0, self.M, self.desc.m),
                self._count(em, self.col0, self.N, self.desc.n))

    def fits_u32(self, em, ok: str) -> None:
        """AND into `ok`: the tile count, G * tiles_n and the workgroup count are below
        2^31, so u32 tile arithmetic is exact and t + stride never wraps (computed in u64
        multiplications: no division, no call). Counted unpaired even for pair tiles:
        those counts are the larger, and `schedule: auto`'s ping-pong branch runs
        unpaired in a paired kernel (wgmma.alone)."""
        wide = Tiles(em, self.own, self.row0, self.col0, self.M, self.N, wide=True)
        tm, tn = wide._counts(em)
        _, n = wide._grid_ids(em)
        v = em.new("rd")
        for x, y in ((tm, tn), (tn, None), (n, None)):
            if y is None:
                y = self.desc.persistent if x == tn else 1
            em.put(I.binary("mul.lo", "u64", v, x, y),
                   I.setp_and("lt", "u64", ok, v, 2147483648, ok))

    def _grid_ids(self, em) -> tuple[str, str]:
        """(linear workgroup id, workgroups in the grid); paired: (cluster id, clusters),
        the linear id halved (a cluster is 2 workgroups along x, and x is even)."""
        ids = {}
        for s in ("ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z"):
            r = em.new("r")
            em.put(I.mov("u32", r, f"%{s}"))
            if self.c == "rd":
                w = em.new("rd")
                em.put(I.cvt("u64", "u32", w, r))
                r = w
            ids[s] = r
        w, n, t = em.new(self.c), em.new(self.c), self.t
        em.put(I.mad("lo", t, w, ids["ctaid.z"], ids["nctaid.y"], ids["ctaid.y"]),
               I.mad("lo", t, w, w, ids["nctaid.x"], ids["ctaid.x"]),
               I.binary("mul.lo", t, n, ids["nctaid.x"], ids["nctaid.y"]),
               I.binary("mul.lo", t, n, n, ids["nctaid.z"]))
        if self.pair:
            em.put(I.binary("shr", t, w, w, 1), I.binary("shr", t, n, n, 1))
        return w, n

    def start(self, em) -> str:
        """A fresh tile counter at this workgroup's first tile."""
        return self._grid_ids(em)[0]

    def exit_if_done(self, em, t: str, done: str, plan=None) -> None:
        """Branch to `done` past the last tile (a split_k loop: past the last part, by
        its streamk.Plan)."""
        p = em.new("p")
        if plan is not None:
            total = em.new("r")
            em.put(I.mad("lo", "u32", total, plan.r, plan.s, plan.whole))
        else:
            tm, tn = self._counts(em)
            total = em.new(self.c)
            em.put(I.binary("mul.lo", self.t, total, tm, tn))
        em.put(I.setp("ge", self.t, p, t, total), I.bra(done, guard=p, uniform=True))

    def counts(self, em) -> tuple[str, str, str]:
        """(tiles, workgroups, K chunks) of a split_k loop, u32."""
        tm, tn = self._counts(em)
        _, w = self._grid_ids(em)
        total, nk = em.new("r"), em.new("r")
        em.put(I.binary("mul.lo", "u32", total, tm, tn),
               I.binary("add", "u32", nk, self.K, self.bk - 1),
               I.binary("shr", "u32", nk, nk, self.bk.bit_length() - 1))
        return total, w, nk

    def split_unit(self, em, t: str, plan) -> tuple[str, str, str]:
        """(tile, first K chunk, end K chunk) of unit t of a split_k loop."""
        sk, u, q, i = em.new("p"), em.new("r"), em.new("r"), em.new("r")
        tile, k0, k1 = em.new("r"), em.new("r"), em.new("r")
        em.put(I.setp("ge", "u32", sk, t, plan.whole), I.binary("sub", "u32", u, t, plan.whole),
               I.binary("div", "u32", q, u, plan.s), I.binary("rem", "u32", i, u, plan.s),
               I.binary("add", "u32", tile, q, plan.whole), I.selp("u32", tile, tile, t, sk),
               I.binary("mul.lo", "u32", k0, i, plan.nk), I.binary("add", "u32", k1, k0, plan.nk),
               I.binary("div", "u32", k0, k0, plan.s), I.binary("div", "u32", k1, k1, plan.s),
               I.selp("u32", k0, k0, 0, sk), I.selp("u32", k1, k1, plan.nk, sk))
        return tile, k0, k1

    def advance(self, em, t: str) -> None:
        em.put(I.binary("add", self.t, t, t, self._grid_ids(em)[1]))

    def origin(self, em, t: str) -> tuple[str, str]:
        """(row, column) of tile t: group g = t / per_group holds row tiles
        [g*G, min(g*G + G, tiles_m)); inside it, tile u = t % per_group is row u % rows,
        column u / rows."""
        G, ty = self.desc.persistent, self.t
        tm, tn = self._counts(em)
        per_group, first, rows, u, r, c = (em.new(self.c) for _ in range(6))
        em.put(I.binary("mul.lo", ty, per_group, tn, G), I.binary("div", ty, first, t, per_group),
               I.binary("rem", ty, u, t, per_group), I.binary("mul.lo", ty, first, first, G),
               I.binary("sub", ty, rows, tm, first))
        few = em.new("p")
        em.put(I.setp("lt", ty, few, rows, G), I.selp(ty, rows, rows, G, few),
               I.binary("rem", ty, r, u, rows), I.binary("add", ty, r, r, first),
               I.binary("div", ty, c, u, rows))
        row, col = em.new("r"), em.new("r")
        for out, idx, size, base in ((row, r, self.desc.m, self.row0),
                                     (col, c, self.desc.n, self.col0)):
            if self.c == "rd":
                em.put(I.cvt("u32", "u64", out, idx))     # idx * size < bound - base
            else:
                em.put(I.mov("u32", out, idx))
            em.put(I.mad("lo", "u32", out, out, size, base))
        if self.pair:                        # rank r: the pair tile's rows r * desc.m on
            rank = em.new("r")
            em.put(I.mov("u32", rank, "%cluster_ctarank"),
                   I.mad("lo", "u32", row, rank, self.own.m, row))
        return row, col


def open_loop(em, tiles: Tiles, name: str, unit: list | None = None):
    """Open `for t = first; t < total; t += step` at the current point: returns the tile's
    (row, column) registers and close(), which emits the loop's back edge and exit. The
    tile counter is a fresh register, so each warp role runs its own copy of the loop.
    A split_k loop appends (t, (first K chunk, end K chunk)) to `unit`."""
    t = tiles.start(em)
    top, done = label(em, f"{name}_tile"), label(em, f"{name}_tiles_done")
    em.put(I.label(top))
    if tiles.work is None:
        tiles.exit_if_done(em, t, done)
        row, col = tiles.origin(em, t)
    else:
        plan = streamk.plan(em, tiles)
        tiles.exit_if_done(em, t, done, plan)
        tile, k0, k1 = tiles.split_unit(em, t, plan)
        unit.append((t, (k0, k1)))
        row, col = tiles.origin(em, tile)

    def close() -> None:
        tiles.advance(em, t)
        em.put(I.bra(top, uniform=True), I.label(done))
    return row, col, close


def tile_loop(em, g, tiles: Tiles | None, name: str):
    """Open one pipeline role's tile loop: (g at the tile's origin, close()). Without
    `tiles`, g itself and a no-op close: one region."""
    if tiles is None:
        return g, lambda: None
    unit = []
    row, col, close = open_loop(em, tiles, name, unit)
    if not unit:
        return replace(g, row=row, col=col), close
    (t, kc), = unit
    return replace(g, row=row, col=col, kc=kc, unit=t), close


def each_tile(em, tiles: Tiles | None, name: str, end: str, row: str, col: str,
              body) -> None:
    """`body(row, col, then)` for the region at (row, col), continuing at `end`; with
    `tiles`, once per tile of this workgroup (at the tile's origin), each continuing at
    the next tile."""
    if tiles is None:
        body(row, col, end)
        return
    t_row, t_col, close = open_loop(em, tiles, name)
    nxt = label(em, f"{name}_next")
    body(t_row, t_col, nxt)
    em.put(I.label(nxt))
    close()
