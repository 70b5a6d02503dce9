"""Tile `tensor_matmul` on warp tensor cores (docs/internals/tile-values.md 8.3, "a later
speed step"; docs/reference/tiles.md "Targets"): used when the target has the m16n8k16
f16/bf16 warp MMA (the driver says so through `tile_mma`: PTX profiles sm_80 and newer)
and the staging fits; every other target, and a matmul too large to stage, replays
(tile_replay.py). The sum order is the one tiles.md leaves implementation-defined for the
matmul; every other operation keeps the replay's exact bits, because the operands and
the result stay in the replay's distributed layout and are converted at the boundaries:

- b is staged once, transposed (column n at n*K), as 16-bit bits in a workgroup array;
- for each 16-row slab of the result: the slab's rows of a (16-bit) and of c (f32) go to
  workgroup memory, `barrier`; warp w computes the slab's 16x8 blocks w, w + W/32, ...
  with `tile.mma` (its accumulators and A fragments in registers, the A fragments loaded
  once per slab and reused across the warp's blocks), writes them over c's slab,
  `barrier`, the owners read their elements back, `barrier`.

Cost per matmul: three barriers per slab plus one staging pass over b and, per slab, over
the work-item's elements of a, c and the result in that slab's rows, against the replay's
two barriers and K scalar fmas per element per 16-wide K chunk.
"""
from __future__ import annotations

from ..ir.types import F32, U16, U32, VectorType, ptr
from .tile_replay import NEG_ZERO, TileType, TileVal

# b and an a slab; with the f32 scratch (at most 16 * 256 + 256 floats for the reductions
# of the largest tile) under the 48 KiB of static workgroup memory every profile has
STAGE_BYTES = 36 * 1024
_VEC4 = VectorType(F32, 4)


class TileMmaMixin:
    def _mma_fits(self, a: TileVal, bt: TileVal) -> bool:
        K, N = a.type.columns, bt.type.columns
        return bool(getattr(self.ctx, "tile_mma", False)) and \
            2 * (K * N + 16 * K) <= STAGE_BYTES

    def _mma_stage(self, units: int, span):
        """The workgroup array of 16-bit staging, shared by every tile matmul of the
        kernel (each ends with a barrier) and grown to the largest."""
        return self._grown("tile_mma", U16, units, span)

    def _mma_matmul(self, a: TileVal, bt: TileVal, c, rt: TileType, span) -> TileVal:
        b = self.b
        M, K, N = a.type.rows, a.type.columns, bt.type.columns
        W = self._width(span)
        warps, blocks = W // 32, N // 8
        stage = self._mma_stage(K * N + 16 * K, span)
        a_slab = b.ptradd(stage, self._i64(self._c32(K * N)))
        words = b.bitcast(stage, ptr(U32, "workgroup"))
        cs = self._scratch(16 * N, span)
        out = self._alloc(rt, "mm", span)
        tid = self._tid(span)
        c32 = self._c32

        # b transposed: element (q, n) at n*K + q, so a B register pair (q, q+1) is a word
        self._each(bt.type, span, lambda s, i, j: self._put(
            stage, b.add(b.mul(j, c32(K)), i), self._get(bt, s)))
        warp, lane = b.div(tid, c32(32)), b.rem(tid, c32(32))
        g, t = b.div(lane, c32(4)), b.rem(lane, c32(4))

        def word(base_u16, offset_words):
            """The u32 at 16-bit index base_u16 (even) plus offset_words words."""
            idx = b.add(b.div(base_u16, c32(2)), offset_words)
            return b.load(self._at(words, idx))

        def slab(k):
            r0 = b.mul(k, c32(16))

            self._each_slab(a.type, r0, span, lambda s, di, j: self._put(
                a_slab, b.add(b.mul(di, c32(K)), j), self._get(a, s)))
            if c is not None:
                self._each_slab(rt, r0, span, lambda s, di, j: self._put(
                    cs, b.add(b.mul(di, c32(N)), j), self._get(c, s)))
            self._barrier(span)
            # A fragments of the slab (PTX ISA m16n8k16 .row A: rows g, g+8; columns
            # 2t, 2t+1 and 2t+8, 2t+9 of each 16-wide K chunk), reused by every block
            top, low = b.mul(g, c32(K)), b.mul(b.add(g, c32(8)), c32(K))
            top, low = (b.add(c32(K * N), x) for x in (top, low))
            afrag = []
            for kc in range(K // 16):
                off = b.add(c32(8 * kc), t)
                w0, w1 = word(top, off), word(low, off)
                w2, w3 = word(top, b.add(off, c32(4))), word(low, b.add(off, c32(4)))
                afrag.append((w0, w1, w2, w3))
            for slot in range(-(-blocks // warps)):
                blk = b.add(warp, c32(slot * warps))

                def block(blk=blk):
                    self._mma_block(blk, afrag, words, cs, g, t, K, N, c is not None,
                                    a.type.format)
                if (slot + 1) * warps > blocks:     # the last round: not every warp has one
                    self._if(b.cmp("lt", blk, c32(blocks)), block)
                else:
                    block()
            self._barrier(span)
            self._each_slab(rt, r0, span, lambda s, di, j: self._put(
                out, s, b.load(self._at(cs, b.add(b.mul(di, c32(N)), j)))))
            self._barrier(span)
        self._for(M // 16, slab)
        return TileVal(rt, out, True)

    def _mma_block(self, blk, afrag, words, cs, g, t, K: int, N: int, has_c: bool,
                   fmt: str) -> None:
        """Block blk (columns 8*blk ...) of the slab: c from the scratch (or -0.0, the
        replay's start), K/16 MMAs, the result back over c's place."""
        b, c32 = self.b, self._c32
        col = b.add(b.mul(blk, c32(8)), b.mul(t, c32(2)))
        places = []
        for row in (g, b.add(g, c32(8))):
            at = b.add(b.mul(row, c32(N)), col)
            places += [at, b.add(at, c32(1))]
        if has_c:
            acc = [b.load(self._at(cs, p)) for p in places]
        else:
            acc = [b.const(F32, NEG_ZERO)] * 4
        # B fragment: rows 2t, 2t+1 (and +8) of column 8*blk + g, a word of transposed b
        bcol = b.mul(b.add(b.mul(blk, c32(8)), g), c32(K))
        for kc, frag in enumerate(afrag):
            off = b.add(c32(8 * kc), t)
            b0 = b.load(self._at(words, b.add(b.div(bcol, c32(2)), off)))
            b1 = b.load(self._at(words, b.add(b.div(bcol, c32(2)), b.add(off, c32(4)))))
            d = b.emit("tile.mma", _VEC4, [*frag, b0, b1, *acc],
                       {"format": fmt})
            acc = [b.emit("vec.extract", F32, [d], {"index": i}) for i in range(4)]
        for p, v in zip(places, acc):
            self._put(cs, p, v)
