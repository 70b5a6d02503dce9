"""The wgmma form of register-resident tiles (docs/internals/tile-wgmma.md): on sm_90a with
--gpu-tile-wgmma=on, when the layout plan (tile_plan._wgmma_why) allows it, a tile matmul
of a fragment tile a and a shared tile b is `wgmma.mma_async m64nNk16` with A from
registers instead of ldmatrix + mma.sync. Every register stays where tile_frag.py puts it:

- the f32 fragment tile's registers of slab k are wgmma's accumulators in order: register
  4j + 2h + e of lane l of warp w holds row 16 (w % 4) + l/4 + 8h, column 8j + 2 (l % 4) + e
  of the warpgroup's 64-row block (cute CLayout_64xN, mma_traits_sm90_gmma.hpp), and with
  warps = 4q, warp w's slab k is 64-row block w/4 + q k, its warps in order;
- the four words of k-chunk kc (tile_frag: words (2kc, 0), (2kc, 1), (2kc+1, 0),
  (2kc+1, 1)) are the A registers of one k step: rows l/4 (+8), k columns 2 (l % 4) + 0..1
  (+8) (cute ALayout_64x16 of the *_RS forms, which is the m16n8k16 A fragment per warp).

A shared tile is kept in a swizzled wgmma layout (swizzle S = 128, 64 or 32 bytes a row,
tile_plan.swizzle_of): its contiguous dimension (inner, I elements) is cut in panels of
S/2 elements; panel p holds every outer row o (O of them) as one S-byte row, so

    byte(o, i) = p*O*S + o*S + ((c ^ f(o)) * 16) + (i % 8) * 2,
    p = i / (S/2), c = (i % (S/2)) / 8, f(o) = ((o*S) >> 7) % (S/16)

(16-byte chunk c of a row moves to c ^ f(o): the hardware XORs address bits 4.. with bits
7.., cute Swizzle<3|2|1, 4, 3>), with the array 1024-byte aligned. That is cute's
Layout_{K,MN}_SW{S}_Atom tiled along the outer dimension first (mma_traits_sm90_gmma.hpp):

- b loaded `layout: col` (Kᵀ: its columns contiguous, outer = N, inner = K) is a K-major B:
  SBO = 8*S (the next 8 rows of N), LBO unused (16 B, as cute sets it); k step ks starts
  at panel 2*16*ks/S, byte (32*ks) % S of the row, imm-trans-b = 0;
- b loaded by rows (V: outer = K, inner = N) is an MN-major B: SBO = 8*S (the next 8 rows
  of K), LBO = O*S (the next panel of N, cute's stride_01); k step ks starts at row 16 ks,
  imm-trans-b = 1 (allowed for f16/bf16).

With --gpu-tile-wgmma-a=shared an A tile only `tile_load` assigns (tile_plan._a_in_shared)
is a shared tile too, loaded by rows (outer = M, inner = K): a K-major A, described like
the K-major B (same k steps, SBO 8*S), imm-trans-a = 0. Warpgroup g's slab k is rows
64 (g + q k) (warps = 4q), which start 64 (g + q k) S bytes into every panel: a multiple of
the 8-row swizzle pattern, so the descriptor's base offset stays 0.
"""
from __future__ import annotations

from ..ir.types import F32, VectorType
from .tile_replay import TileType


def steps_and_strides(home, k: int, kmajor: bool | None = None
                      ) -> tuple[tuple[int, ...], int, int, int]:
    """(byte offset of each 16-wide k step's descriptor start, LBO, SBO, imm-trans) of the
    shared tile `home` read as a K x N b operand, or (kmajor True) as an A operand loaded
    by rows (module docstring)."""
    S, O = home.swizzle, home.outer
    if home.col if kmajor is None else kmajor:      # K-major: inner = K
        half = S // 2
        steps = tuple((16 * ks // half) * O * S + (2 * 16 * ks) % S for ks in range(k // 16))
        return steps, 16, 8 * S, 0
    steps = tuple(16 * ks * S for ks in range(k // 16))       # MN-major: outer = K
    return steps, O * S, 8 * S, 1


class TileWgmmaMixin:
    def _wg_remark(self, plan) -> str:
        sw = {s.swizzle for s in plan.shared.values()}
        names = ", ".join(f"`{n}`" for n in plan.shared)
        if len(sw) == 1:
            where = f"shared tiles in the {sw.pop()}-byte swizzled layout: {names}"
        else:
            where = "shared tiles in swizzled layouts: " + ", ".join(
                f"`{n}` ({s.swizzle}-byte)" for n, s in plan.shared.items())
        if plan.a_shared:
            a = ", ".join(f"`{n}`" for n in plan.a_shared)
            source = f"A from shared tiles ({a}) or registers"
        else:
            source = "A from registers"
        if plan.dynamic:
            where += (f", in dynamic workgroup memory ({plan.dynamic} bytes every launch "
                      "must give: the signature's shared_bytes)")
        return ("tile values held in registers in the mma fragment layout "
                f"({plan.warps} subgroups) on wgmma ({source}), {where}")

    def _swizzled(self, home, o, v):
        """The u32 element index of (outer o, inner v) in a swizzled shared tile."""
        b, c = self.b, self._c32
        S = home.swizzle
        half = S // 2
        panel = b.mul(b.div(v, c(half)), c(home.outer * half))
        chunk = b.div(b.rem(v, c(half)), c(8))
        f = b.binop("and", b.binop("shr", b.mul(o, c(S)), c(7)), c(S // 16 - 1))
        inrow = b.add(b.mul(b.binop("xor", chunk, f), c(8)), b.rem(v, c(8)))
        return b.add(b.add(panel, b.mul(o, c(half))), inrow)

    def _wg_matmul(self, a, bt, c, rt: TileType, span) -> list:
        """The registers of c + a*b on wgmma (the plan's waits are done): one tile.wgmma
        for every slab, complete when it returns (wgmma.wait_group 0), so the shared tiles
        it reads may be overwritten by any later load and its registers read by any later
        operation."""
        b = self.b
        home = bt.shared
        K, N = a.type.columns, bt.type.columns
        slabs = rt.rows // (16 * self._tplan.warps)
        nba = K // 8
        steps, lbo, sbo, trans = steps_and_strides(home, K)
        attrs = {"format": a.type.format, "n": N, "slabs": slabs, "steps": steps,
                 "lbo": lbo, "sbo": sbo, "swizzle": home.swizzle, "trans": trans}
        if a.home == "shared":      # A through a descriptor too: this warpgroup's rows
            ah = a.shared
            a_steps, a_lbo, a_sbo, _ = steps_and_strides(ah, K, kmajor=True)
            group = b.div(self._geo(span)[0], self._c32(4))
            first = b.mul(group, self._c32(64 * ah.swizzle // 2))
            a_ops = [self._at(ah.ptr, first)]
            attrs.update(a_steps=a_steps, a_lbo=a_lbo, a_sbo=a_sbo, a_swizzle=ah.swizzle,
                         a_slab=64 * (self._tplan.warps // 4) * ah.swizzle)
        else:
            a_ops = []
            for k in range(slabs):
                for kc in range(K // 16):
                    w = (k * nba + 2 * kc) * 2
                    a_ops += a.regs[w:w + 4]
        half = N // 2
        # without c the first k step does not read the accumulators (scale-d false): no
        # moves of a start value into them
        acc = list(c.regs) if c is not None else []
        d = b.emit("tile.wgmma", VectorType(F32, slabs * half), [*a_ops, home.ptr, *acc],
                   attrs)
        self._tile_clean = None         # a shared read since the last barrier
        return [b.emit("vec.extract", F32, [d], {"index": i}) for i in range(slabs * half)]
