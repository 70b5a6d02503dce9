"""A minimal CPU model of `wgmma.mma_async` with A from registers, for the wgmma form of
register-resident tiles (frontend/tile_wgmma.py), written from the CUTLASS/PTX ISA layout
descriptions, not from the compiler's address code:

- a warpgroup collective: all 128 threads of warps 4g..4g+3 at the instruction;
- A (64 x 16): register i of lane l of warp w (of the group) holds row 16w + l/4 + 8 (i % 2),
  k columns 2 (l % 4) + 8 (i / 2) + 0, 1 (low half first) (cute ALayout_64x16);
- D (64 x N f32): register v holds row 16w + l/4 + 8 ((v / 2) % 2), column
  8 (v / 4) + 2 (l % 4) + v % 2 (cute CLayout_64xN);
- B (16 x N) through the descriptor (start >> 4 in bits 0..13, LBO >> 4 in 16..29,
  SBO >> 4 in 32..45, layout type in 62..63: 1 = 128-byte, 2 = 64-byte, 3 = 32-byte
  swizzle; cute GmmaDescriptor). With S the swizzle's row bytes, element (k, n) is at
  byte offset, before the swizzle,
    K-major (imm-trans-b 0):  (n % 8) S + (n / 8) SBO + 2k
        (cute make_gmma_desc<K>: ((8,m),(T,2)):((S/16 T, SBO),(1, T)), T = 8 elements)
    MN-major (imm-trans-b 1): 2 (n % (S/2)) + (n / (S/2)) LBO + (k % 8) S + (k / 8) SBO
        (cute make_gmma_desc<MN>: ((T,S/16,m),(8,k)):((1,T,LBO),(S/16 T,SBO)))
  from the start address, then the swizzle of the absolute shared address: bits
  4..4+log2(S/16) ^= bits 7..; D = A B (+ D when scale-d, else D is not read) in
  float64, rounded to f32, computed at issue (so fences and group waits have nothing to
  model here: the PTX tests check their order);
- shared arrays sit 1024-byte aligned in a 256 KiB-aligned window (the descriptor's 14-bit
  address field names shared addresses modulo 256 KiB), as `.align 1024` promises.

An interim check until the independent wgmma model (tests/tensor/wgfrag_sim.py) lands.
"""
from __future__ import annotations

import re

import numpy as np

from .frag_sim import FragSim
from .ptx_sim import SimError, bf16_val, bits_f32, f16_val, f32_bits

WINDOW = 1 << 18
_NOOPS = ("fence.proxy.async.shared::cta", "wgmma.fence.sync.aligned",
          "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned")


class WgRsSim(FragSim):
    def __init__(self, ptx, kernel: str):
        super().__init__(ptx, kernel)
        self.wgmmas = 0

    def _block_shared(self, ctaid) -> dict:
        mem = self.mem
        base = -(-len(mem.data) // WINDOW) * WINDOW
        out, off = {}, 0
        for name, size in self.shared_sizes.items():
            off = -(-off // 1024) * 1024
            out[name] = base + off
            off += size
        mem.data.extend(b"\0" * (base + off + 256 - len(mem.data)))
        self.window = base
        return out

    def _step(self, th) -> None:
        if th.pc < len(self.code):
            guard, negated, op, ops = self.code[th.pc]
            if guard is None and op in _NOOPS:
                th.pc += 1
                self.steps += 1
                return
            if guard is None and op.startswith("wgmma.mma_async"):
                self.steps += 1
                th.wait = op
                return
        super()._step(th)

    def _collective(self, live) -> bool:
        for th in live:
            if th.wait is None or not th.wait.startswith("wgmma.mma_async"):
                continue
            base = th.lin - th.lin % 128
            group = [t for t in self.threads[base:base + 128] if not t.done]
            if len(group) < 128 or not all(t.wait == th.wait and t.pc == th.pc
                                           for t in group):
                continue
            self._wgmma(th.wait, group, self.code[th.pc][3])
            for t in group:
                t.wait, t.pc = None, t.pc + 1
            return True
        return super()._collective(live)

    def _b(self, desc: int, n: int, trans: int, val) -> np.ndarray:
        S = {1: 128, 2: 64, 3: 32}.get(desc >> 62)
        if S is None:
            raise SimError(f"descriptor {desc:#x}: no swizzle")
        start = self.window + ((desc & 0x3FFF) << 4)
        lbo, sbo = ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
        bits = (S // 16).bit_length() - 1
        B = np.zeros((16, n))
        for k in range(16):
            for c in range(n):
                if trans:
                    off = 2 * (c % (S // 2)) + (c // (S // 2)) * lbo + (k % 8) * S \
                        + (k // 8) * sbo
                else:
                    off = (c % 8) * S + (c // 8) * sbo + 2 * k
                a = start + off
                a ^= ((a >> 7) & ((1 << bits) - 1)) << 4
                B[k, c] = val(self.mem.load(a, 2))
        return B

    def _wgmma(self, op: str, group, ops) -> None:
        m = re.match(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(\w+)\.(\w+)$", op)
        if not m or len(ops) != 7:
            raise SimError(f"unsupported {op}")
        n, fmt = int(m.group(1)), m.group(2)
        val = f16_val if fmt == "f16" else bf16_val
        A, D = np.zeros((64, 16)), np.zeros((64, n))
        descs, scale, trans = set(), set(), int(ops[6])
        for t in group:
            w, g, q = (t.lin % 128) // 32, t.lane // 4, t.lane % 4
            for i, r in enumerate(t.vec(ops[1])):
                word = t.val(r)
                row, k = 16 * w + g + 8 * (i % 2), 2 * q + 8 * (i // 2)
                A[row, k], A[row, k + 1] = val(word & 0xFFFF), val(word >> 16)
            dregs = t.vec(ops[0])
            if len(dregs) != n // 2:
                raise SimError(f"{len(dregs)} accumulators for N = {n}")
            scale.add(bool(t.val(ops[3])))
            for v, r in enumerate(dregs if t.val(ops[3]) else ()):   # scale-d false: unread
                D[16 * w + g + 8 * ((v // 2) % 2), 8 * (v // 4) + 2 * q + v % 2] = \
                    bits_f32(t.val(r))
            descs.add(t.val(ops[2]))
        if len(descs) != 1 or len(scale) != 1:
            raise SimError("wgmma operands differ across the warpgroup")
        out = A @ self._b(descs.pop(), n, trans, val) + (D if scale.pop() else 0)
        for t in group:
            w, g, q = (t.lin % 128) // 32, t.lane // 4, t.lane % 4
            for v, r in enumerate(t.vec(ops[0])):
                t.regs[r] = f32_bits(out[16 * w + g + 8 * ((v // 2) % 2),
                                         8 * (v // 4) + 2 * q + v % 2])
        self.wgmmas += 1


def run_wgrs(objects, kernel: str, block: int, args, grid=1):
    return WgRsSim(objects, kernel).run(grid, block, args)
