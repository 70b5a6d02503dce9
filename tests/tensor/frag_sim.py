"""tile_sim extended for register-resident tiles (toolchain/compiler/frontend/tile_frag.py):
the warp collectives `shfl.sync.bfly` and `ldmatrix` and the zero-filling `cp.async` with
a source size. The models are written here from the PTX ISA, not taken from the compiler:

- `shfl.sync.bfly.b32 d, a, m, 31, -1`: d is a of lane (lane xor m);
- `shfl.sync.idx.b32 d, a, j, 31, -1`: d is a of lane j (a broadcast);
- `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 {d0..d3}, [p]`: matrix i has the rows
  whose addresses lanes 8i..8i+7 give (8 consecutive 16-bit elements each); lane l gets
  in d_i the elements (row l/4, columns 2(l%4), 2(l%4)+1) of matrix i, or of its
  transpose with .trans, the first in the low half;
- `cp.async.cg.shared.global [d], [s], 16, n`: the first n bytes copied, the rest zeroed,
  (`16, p` with a predicate p, ignore-src: all 16 zeroed where p holds, else copied)
  *when the copy completes*: copies join the thread's open group, `commit_group` closes
  it, `wait_group N` completes every closed group but the N newest (in issue order), so
  a read of workgroup memory before the right wait sees the old bytes and fails a test;
- `vote.sync.any.pred d, a, m` (`.all`): d is whether a holds in any (every) lane of the
  member mask m, which must name every live lane of the warp, all at this instruction;
- `max.f32`/`min.f32`: a NaN operand is dropped (both NaN: the canonical NaN); equal
  operands (+0 and -0 included) give the first, since the ISA leaves the zero's sign open;
  `min`/`max` of u32/s32.
"""
from __future__ import annotations

import math

from .ptx_sim import SimError, bits_f32
from .tile_sim import TileSim

_WARP_OPS = ("ldmatrix.", "shfl.sync.bfly.", "shfl.sync.idx.", "vote.sync.")
_MINMAX = {"max.f32", "min.f32", "max.u32", "min.u32", "max.s32", "min.s32"}


def _minmax(op: str, a: int, b: int) -> int:
    kind, ty = op.split(".")
    if ty == "f32":
        x, y = bits_f32(a), bits_f32(b)
        if math.isnan(x) and math.isnan(y):
            return 0x7FFFFFFF
        if math.isnan(x) or math.isnan(y):
            return b if math.isnan(x) else a
        if x == y:
            return a
        return a if (x > y) == (kind == "max") else b
    if ty == "s32":
        a, b = (v - (1 << 32) if v & 0x80000000 else v for v in (a & 0xFFFFFFFF,
                                                                  b & 0xFFFFFFFF))
    r = max(a, b) if kind == "max" else min(a, b)
    return r & 0xFFFFFFFF


class FragSim(TileSim):
    def __init__(self, ptx, kernel: str):
        super().__init__(ptx, kernel)
        self.async_open: dict[int, list] = {}
        self.async_groups: dict[int, list] = {}

    def _block(self, ctaid) -> None:
        self.async_open, self.async_groups = {}, {}
        super()._block(ctaid)

    def _open(self, th) -> list:
        return self.async_open.setdefault(th.lin, [])

    def _groups(self, th) -> list:
        return self.async_groups.setdefault(th.lin, [])

    def _step(self, th) -> None:
        if th.pc < len(self.code):
            guard, negated, op, ops = self.code[th.pc]
            on = guard is None or bool(th.val(guard)) != negated
            if on and op.startswith(_WARP_OPS):
                if len(self._warp(th)) < 32 and not op.startswith("vote."):
                    raise SimError(f"{op} with a partial warp")
                self.steps += 1
                th.wait = op
                return
            if on and op in _MINMAX:
                th.regs[ops[0]] = _minmax(op, th.val(ops[1]), th.val(ops[2]))
                th.pc += 1
                self.steps += 1
                return
            if on and op == "cp.async.cg.shared.global" and len(ops) == 4:
                if str(ops[3]).startswith("%p"):        # ignore-src: zeros where it holds
                    n = 0 if th.val(ops[3]) else 16
                else:
                    n = th.val(ops[3])
                if not 0 <= n <= 16 or th.val(ops[2]) != 16:
                    raise SimError(f"cp.async source size {n}")
                d, s = th.addr(ops[0]), th.addr(ops[1])
                data = [self.mem.load(s + i, 1) if i < n else 0 for i in range(16)]
                self._open(th).append((d, data))
                th.pc += 1
                self.steps += 1
                return
            if on and op == "cp.async.commit_group":
                self._groups(th).append(self._open(th))
                self.async_open[th.lin] = []
                th.pc += 1
                self.steps += 1
                return
            if on and op == "cp.async.wait_group":
                groups = self._groups(th)
                keep = int(th.val(ops[0]))
                done, self.async_groups[th.lin] = (groups[:max(len(groups) - keep, 0)],
                                                   groups[max(len(groups) - keep, 0):])
                for group in done:
                    for d, data in group:
                        for i, byte in enumerate(data):
                            self.mem.store(d + i, 1, byte)
                th.pc += 1
                self.steps += 1
                return
        super()._step(th)

    def _collective(self, live) -> bool:
        for th in live:
            if th.wait is None or not th.wait.startswith(_WARP_OPS):
                continue
            group = self._warp(th)
            if not all(t.wait == th.wait and t.pc == th.pc for t in group):
                continue
            _, _, op, ops = self.code[th.pc]
            if op.startswith("ldmatrix."):
                self._ldmatrix(op, group, ops)
            elif op.startswith("vote."):
                self._vote(op, group, ops)
            else:
                if th.val(ops[3]) != 31 or th.val(ops[4]) & 0xFFFFFFFF != 0xFFFFFFFF:
                    raise SimError(f"{op}: only the full-warp form is modelled")
                vals = {t.lane: t.val(ops[1]) for t in group}
                idx = op.startswith("shfl.sync.idx.")
                for t in group:
                    j = t.val(ops[2])
                    t.regs[ops[0]] = vals[j & 31] if idx else vals[t.lane ^ j]
            for t in group:
                t.wait, t.pc = None, t.pc + 1
            return True
        return super()._collective(live)

    @staticmethod
    def _vote(op: str, group, ops) -> None:
        live = sum(1 << t.lane for t in group)
        if any(t.val(ops[2]) != live for t in group):
            raise SimError(f"{op}: member mask is not the warp's live lanes")
        if not op.startswith(("vote.sync.any.pred", "vote.sync.all.pred")):
            raise SimError(f"unsupported {op}")
        votes = [bool(t.val(ops[1])) for t in group]
        d = any(votes) if op.startswith("vote.sync.any.") else all(votes)
        for t in group:
            t.regs[ops[0]] = int(d)

    def _ldmatrix(self, op: str, group, ops) -> None:
        if ".x4." not in op + ".":
            raise SimError(f"unsupported {op}")
        trans = ".trans" in op
        by_lane = {t.lane: t for t in group}
        mats = []
        for i in range(4):
            rows = []
            for r in range(8):
                a = by_lane[8 * i + r].addr(ops[1])
                if a % 16:
                    raise SimError("ldmatrix row address not 16-byte aligned")
                rows.append([self.mem.load(a + 2 * c, 2) for c in range(8)])
            mats.append(rows)
        for t in group:
            g, q = t.lane // 4, t.lane % 4
            for i, reg in enumerate(t.vec(ops[0])):
                m = mats[i]
                lo, hi = (m[2 * q][g], m[2 * q + 1][g]) if trans else (m[g][2 * q],
                                                                        m[g][2 * q + 1])
                t.regs[reg] = lo | hi << 16


def run_frag(objects, kernel: str, block: int, args, grid=1):
    return FragSim(objects, kernel).run(grid, block, args)
