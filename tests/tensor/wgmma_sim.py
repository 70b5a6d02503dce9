"""The sm_90a workgroup GEMM pipeline on the CPU interpreter (tests only): ptx_sim.Sim plus
the few things the pipeline's PTX needs, written from the PTX ISA's descriptions, not from
the compiler:

- mbarriers: init (expected arrivals), arrive, arrive.expect_tx, the copy's complete_tx,
  inval; `try_wait.parity` answers as the hardware does (the phase with that parity has
  completed: only modulo 2) and, when it fails, the thread yields to the others;
- tensor maps: `tensormap.replace` fields kept per map address; `cp.async.bulk.tensor.2d`
  copies the box at signed coordinates (k, row), zero-filling what lies outside the
  extents, into shared memory with the 128-byte swizzle as a function of the address
  (bits 4-6 ^= bits 7-9; a 64-byte swizzled map, whose box rows are 64 bytes: bits 4-5
  ^= bits 7-8), then completes the box's bytes on the barrier at once;
- `wgmma.mma_async m64nNkK` as a warpgroup collective (all 128 threads at the
  instruction): A (64 rows) and B (N rows) read K-major through their descriptors
  (decoded by wgmma_desc.py: the same swizzle), D = A·B (+ D) in float64 rounded to f32,
  registers placed by the m64nN f32 layout (register 4j + 2h + e of lane l of warp w: row
  16w + l/4 + 8h, column 8j + 2(l%4) + e), computed at issue; `commit_group` and
  `wait_group N` track which stage rows each warpgroup's unretired groups still read;
- `%smid` = 0, `%dynamic_smem_size` = the launch's bytes, the module's `.global`
  workspace and the `.extern .shared` ring (placed 256 KiB-aligned, so the descriptors'
  14-bit address field, taken modulo 256 KiB, names the right bytes).
- D's stores (`cp.async.bulk.tensor.{2d,3d}.global.shared::cta.bulk_group`; rank 3: the
  middle dimension's box is 1, so the box's shared layout is rank 2's): the box is read
  from shared memory (the same swizzle) when the store is issued and written to global
  memory, clipped to the map's extents, when it completes: at the issuing thread's
  `cp.async.bulk.wait_group[.read] N` for all but its N newest committed groups; a box
  whose shared bytes changed between the two was overwritten before the copy engine had
  read it, and a workgroup that ends with a store not waited for frees shared memory the
  copy engine may still read (errors both). A row is clipped at a whole 16-byte unit, as
  the H100 was measured to do (a box of f32 columns from 256 on with N = 257 wrote
  columns 257-259 too), not at N;
- with a seed, copies land later, one at a time in a random order, and one landing on
  rows an unretired group reads is an error (a stage released too early).
A thread that waits on a barrier nobody can complete any more is a deadlock (SimError).
Wider schedules of the protocol are the random-schedule models' part
(test_wgmma_ring_model.py, test_wgmma_pingpong_model.py)."""
from __future__ import annotations

import random
import re

import numpy as np

from tests.support import tensor_oracle as O

from .ptx_sim import Sim, SimError, _signed, warp_shfl
from .wgmma_desc import SWIZZLE_WIDTH, accumulators, fields, operand, values

ELEM_BYTES = {0: 1, 6: 2, 7: 4, 10: 2}      # tensormap elemtype codes: u8, f16, f32, bf16
COPY_SWIZZLE = {3: 128, 2: 64}              # tensormap swizzle_mode codes: row bytes
WINDOW = 1 << 18                            # the descriptors' address field: 14 bits << 4


class PipelineSim(Sim):
    def __init__(self, ptx: str, kernel: str, dyn_bytes: int, undefined: int | None = None,
                 seed: int | None = None):
        """`seed`: copies land later, one at a time in a random order, whenever every
        thread waits (None: each at once), and a copy landing on shared memory that a
        wgmma group not yet retired by `wgmma.wait_group` reads is an error."""
        super().__init__(ptx, kernel, undefined)
        self.dyn_bytes = dyn_bytes
        self.rng = random.Random(seed) if seed is not None else None
        self.globals = {m.group(1): int(m.group(2)) for m in re.finditer(
            r"^\s*\.global\s.*?\.b8\s+(\w+)\[(\d+)\];", ptx, re.M)}
        self.extern = re.findall(r"^\s*\.extern \.shared .*?\.b8\s+(\w+)\[\];", ptx, re.M)
        self.wgmmas = 0
        self.stores = 0                         # D boxes stored by the copy engine
        self.stores_by_rank = {}                # ... by the rank of their tensor map

    def special(self, th, name: str):
        if name == "%smid":
            return 0
        if name == "%dynamic_smem_size":
            return self.dyn_bytes
        return super().special(th, name)

    def run(self, grid, block, args):
        self._workspace = None
        return super().run(grid, block, args)

    def _block(self, ctaid) -> None:
        if self._workspace is None:             # module scope: once per launch
            self._workspace = {n: self.mem.alloc(n, np.zeros(s, np.uint8))
                               for n, s in self.globals.items()}
        mem = self.mem
        mem.data.extend(b"\0" * ((-len(mem.data)) % WINDOW))
        self.window = len(mem.data)              # the extern ring, fresh per workgroup
        mem.data.extend(b"\0" * (self.dyn_bytes + 256))
        self.bars, self.maps = {}, {}
        self.pending = []                        # copies issued, not landed
        self.groups: dict[int, list] = {}        # warpgroup -> [open group, older...]
        self.events, self._seen = 0, None
        self.bulk: dict = {}                     # thread -> [open group, committed...]
        super()._block(ctaid)
        self._drain_stores()

    def _block_shared(self, ctaid) -> dict:
        """The static arrays, the module-scope workspace and the extern ring window."""
        shared = super()._block_shared(ctaid)
        shared.update(self._workspace)
        shared.update({n: self.window for n in self.extern})
        return shared

    # the scheduler: a failed try_wait waits ("mbar"); such threads are retried once every
    # thread waits and no collective can run, and a retry with no barrier changed since
    # the last one is a deadlock
    def _collective(self, live) -> bool:
        if self._ready_collective(live):
            return True
        return self._land_or_retry(live)

    def _ready_collective(self, live) -> bool:
        """Run one collective (wgmma, bar.sync, a warp's) every member of which waits at
        it; False when none is ready."""
        for th in live:
            if th.wait in (None, "mbar"):        # None: runnable (ClusterSim's stalls)
                continue
            if th.wait.startswith("wgmma"):
                base = th.lin - th.lin % 128
                group = [t for t in self.threads[base:base + 128] if not t.done]
                if len(group) != 128:
                    raise SimError("wgmma with a partial warpgroup")
            elif th.wait == "bar.sync":
                group = live
            else:
                group = self._warp(th)
            same = (lambda t: t.wait == "bar.sync") if th.wait == "bar.sync" else \
                (lambda t: t.wait == th.wait and t.pc == th.pc)   # bar.sync: by id, any pc
            if all(same(t) for t in group):
                if th.wait.startswith("wgmma"):
                    self._wgmma(group)
                elif th.wait.startswith("mma"):
                    raise SimError("warp mma in the pipeline")
                elif th.wait.startswith("shfl"):
                    warp_shfl(th.wait, group, self.code[th.pc][3])
                for t in group:
                    t.wait, t.pc = None, t.pc + 1
                return True
        return False

    def _land_or_retry(self, live) -> bool:
        """Every thread waits: land one pending copy, or retry the mbarrier waiters if a
        barrier changed since their last try; else a deadlock."""
        waiting = [t for t in live if t.wait == "mbar"]
        if self.pending:                         # a copy lands, then every waiter retries
            self._land(self.pending.pop(self.rng.randrange(len(self.pending))))
            for t in waiting:
                t.wait = None
            return True
        if waiting and self.events != self._seen:
            self._seen = self.events
            for t in waiting:
                t.wait = None
            return True
        if waiting:
            raise SimError("deadlock: threads wait on mbarriers nobody completes: pcs " +
                           str(sorted({t.pc for t in waiting})))
        return False

    def _step(self, th) -> None:
        own = self._own_op(th, ("mbarrier.", "tensormap.", "cp.async.bulk.", "fence.",
                                "setmaxnreg", "wgmma."))
        if own is None:
            super()._step(th)
            return
        self.steps += 1
        self._pipeline_op(th, *own)

    def _pipeline_op(self, th, op: str, ops) -> None:
        if op.startswith("wgmma.mma_async"):
            th.wait = op                         # a warpgroup collective
            return
        th.pc += 1
        if op.startswith(("wgmma.commit_group", "wgmma.wait_group")):
            if th.lin % 128 == 0:                # the warpgroup's groups, once
                open_, *older = self.groups.get(th.lin // 128, [[]])
                if op.startswith("wgmma.commit_group"):
                    self.groups[th.lin // 128] = [[], open_, *older]
                else:
                    self.groups[th.lin // 128] = [open_, *older[:th.val(ops[0])]]
            return
        if op.startswith(("fence.", "setmaxnreg", "wgmma.")):
            return                               # fences
        if op.startswith("mbarrier."):
            self._mbarrier(th, op, ops)
        elif op.startswith("tensormap.replace"):
            field = op.split(".")[3]
            at = th.addr(ops[0])
            vals = [th.val(o) for o in ops[1:]]
            entry = self.maps.setdefault(at, {})
            entry[field if len(vals) == 1 else (field, vals[0])] = vals[-1]
        elif op.startswith(("cp.async.bulk.tensor.2d.global.shared::cta",
                            "cp.async.bulk.tensor.3d.global.shared::cta")):
            self._store(th, ops)
        elif op.startswith("cp.async.bulk.tensor.2d"):
            self._copy(th, ops)
        elif op.startswith("cp.async.bulk.commit_group"):
            open_, *done = self.bulk.get(th, [[]])
            self.bulk[th] = [[], *done, open_]
        elif op.startswith("cp.async.bulk.wait_group"):
            open_, *done = self.bulk.get(th, [[]])
            land = max(0, len(done) - th.val(ops[0]))      # all but the newest N
            for group in done[:land]:
                for box in group:
                    self._store_lands(box)
            self.bulk[th] = [open_, *done[land:]]
        else:
            raise SimError(f"unsupported pipeline instruction {op}")

    # ---- mbarriers
    def _mbarrier(self, th, op: str, ops) -> None:
        kind = op.split(".")[1]
        if kind == "init":
            self.bars[th.addr(ops[0])] = {"count": th.val(ops[1]), "left": th.val(ops[1]),
                                          "tx": 0, "phase": 0}
            self.events += 1
        elif kind == "inval":
            self.bars.pop(th.addr(ops[0]), None)
        elif kind == "try_wait":
            bar = self._bar(th.addr(ops[1]))
            if bar["phase"] % 2 != th.val(ops[2]) % 2:
                th.regs[ops[0]] = 1
            else:                                # not yet: yield, retry this instruction
                th.pc -= 1
                th.wait = "mbar"
        elif kind == "arrive" and "expect_tx" in op:
            bar = self._bar(th.addr(ops[1]))
            bar["tx"] += th.val(ops[2])
            self._arrive(bar)
        elif kind == "arrive":
            self._arrive(self._bar(th.addr(ops[1])))
        else:
            raise SimError(f"unsupported {op}")

    def _bar(self, addr: int) -> dict:
        if addr not in self.bars:
            raise SimError(f"mbarrier at {addr:#x} used before its init (or after inval)")
        return self.bars[addr]

    def _arrive(self, bar: dict) -> None:
        if bar["left"] <= 0:
            raise SimError("more arrivals than the mbarrier expects in a phase")
        bar["left"] -= 1
        self._maybe_complete(bar)

    def _maybe_complete(self, bar: dict) -> None:
        self.events += 1
        if bar["left"] == 0 and bar["tx"] == 0:
            bar["phase"] += 1
            bar["left"] = bar["count"]

    # ---- the copy engine
    def _copy(self, th, ops) -> None:
        dst = th.addr(ops[0])
        text = str(ops[1])
        regs = re.findall(r"%\w+", text)
        tmap, k, row = th.val(regs[0]), _signed(th.val(regs[1]), 32), \
            _signed(th.val(regs[2]), 32)
        bar = self._bar(th.addr(ops[2]))
        m = self.maps.get(tmap)
        if m is None:
            raise SimError(f"copy through an unwritten tensor map at {tmap:#x}")
        if m.get("swizzle_mode") not in COPY_SWIZZLE or m.get("rank") != 1:
            raise SimError(f"tensor map {m} is not a rank-2 128- or 64-byte-swizzled map")
        r, e, byte, size, at = self._box(m, dst)
        row_bytes = COPY_SWIZZLE[m["swizzle_mode"]]
        dk, dr = m[("global_dim", 0)], m[("global_dim", 1)]
        stride, src = m[("global_stride", 0)], m["global_address"]
        data = np.frombuffer(self.mem.data, np.uint8)
        gr, gk = row + r, k + e
        inside = (gk >= 0) & (gk < dk) & (gr >= 0) & (gr < dr)
        src_at = np.where(inside, src + gr * stride + gk * size + byte, 0)
        values = np.where(inside, data[src_at], 0).astype(np.uint8)
        bk, br = m[("box_dim", 0)], m[("box_dim", 1)]
        copy = (at.ravel(), values.ravel(), bar, bk * br * size, (dst, dst + br * row_bytes))
        if self.rng is None:
            self._land(copy)
        else:
            self.pending.append(copy)

    def _box(self, m: dict, smem: int, rows_dim: int = 1):
        """(row, element and byte index arrays, element size, shared byte addresses) of
        the box of tensor map `m` at shared `smem`, its rows along dimension `rows_dim`:
        a box row is one swizzle row (128 or 64 bytes), the box at the swizzle's repeat
        (8 rows)."""
        size = ELEM_BYTES[m["elemtype"]]
        bk, br = m[("box_dim", 0)], m[("box_dim", rows_dim)]
        row = COPY_SWIZZLE[m["swizzle_mode"]]
        if bk * size != row or smem % (8 * row):
            raise SimError(f"a box row is one {row}-byte swizzle row at a {8 * row}-aligned "
                           "stage or box")
        r = np.arange(br)[:, None, None]
        e = np.arange(bk)[None, :, None]
        byte = np.arange(size)[None, None, :]
        at = smem + r * row + e * size + byte
        return r, e, byte, size, at ^ (((at >> 7) & (row // 16 - 1)) << 4)

    def _store(self, th, ops) -> None:
        """A box of shared memory to global memory in th's open bulk group, read now."""
        text = str(ops[0])
        regs = re.findall(r"%\w+", text)
        tmap, *coords = (_signed(th.val(r), 32) if i else th.val(r)
                         for i, r in enumerate(regs))
        m = self.maps.get(tmap)
        if m is None:
            raise SimError(f"store through an unwritten tensor map at {tmap:#x}")
        rank = len(coords)
        if m.get("swizzle_mode") != 3 or m.get("rank") != rank - 1 or \
                any(m.get(("box_dim", d), 1) != 1 for d in range(1, rank - 1)):
            raise SimError(f"tensor map {m} is not a rank-{rank} 128-byte-swizzled map "
                           "with one row of boxes of every middle dimension")
        # rank 3 (clipped tiles): dimension 1 is the tile, its box size 1, so the box's
        # shared layout is the rank-2 one, rows along the last dimension
        col, *mid, row = coords
        r, e, byte, size, at = self._box(m, th.addr(ops[1]), rows_dim=rank - 1)
        gr, gc = row + r, col + e
        cols = -(-m[("global_dim", 0)] * size // 16) * 16 // size     # whole 16-byte units
        inside = (gc >= 0) & (gc < cols) & (gr >= 0) & (gr < m[("global_dim", rank - 1)])
        dst = m["global_address"] + gr * m[("global_stride", rank - 2)] + gc * size + byte
        for d, t in enumerate(mid, 1):
            inside = inside & (0 <= t < m[("global_dim", d)])
            dst = dst + t * m[("global_stride", d - 1)]
        at, dst, inside = np.broadcast_arrays(at, dst, inside)
        data = np.frombuffer(self.mem.data, np.uint8)
        box = (at.ravel(), data[at.ravel()].copy(), dst[inside], inside.ravel())
        self.bulk.setdefault(th, [[]])[0].append(box)
        self.stores += 1
        self.stores_by_rank[rank] = self.stores_by_rank.get(rank, 0) + 1

    def _store_lands(self, box) -> None:
        at, values, dst, inside = box
        data = np.frombuffer(self.mem.data, np.uint8)
        if not np.array_equal(data[at], values):
            raise SimError("a stored box's shared memory changed before the copy engine "
                           "had read it (a box rewritten before its wait_group.read)")
        data[dst] = values[inside]

    def _drain_stores(self) -> None:
        """The workgroup ended: no store may still be in flight."""
        if any(box for groups in self.bulk.values() for group in groups for box in group):
            raise SimError("the workgroup ended with D stores not waited for")
        self.bulk = {}

    def _land(self, copy) -> None:
        at, values, bar, nbytes, (lo, hi) = copy
        for groups in self.groups.values():
            for group in groups:
                for a, b in group:
                    if a < hi and lo < b:
                        raise SimError("a copy lands on shared memory a wgmma group "
                                       "still reads (a stage released too early)")
        np.frombuffer(self.mem.data, np.uint8)[at] = values
        bar["tx"] -= nbytes
        self._maybe_complete(bar)

    # ---- wgmma
    def _operand(self, desc: int, rows: int, k: int, fmt: str) -> np.ndarray:
        """The K-major operand `desc` names (wgmma_desc.py decodes every layout type)."""
        size = 1 if fmt in ("e4m3", "e5m2") else 2
        data = np.frombuffer(self.mem.data, np.uint8)
        raw = operand(lambda at: data[self.window + at], desc, rows, k, size, mn_major=False)
        if size == 1:
            return O.decode_array(fmt, raw[..., 0]).astype(np.float64)
        return values(raw, fmt)

    def _wgmma(self, group) -> None:
        self.wgmmas += 1
        head = group[0]
        _, _, op, ops = self.code[head.pc]
        m = re.search(r"\.m64n(\d+)k(\d+)\.f32\.(\w+)\.(\w+)", op)
        n, k, fa, fb = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        acc_regs = head.vec(ops[0])
        da, db = head.val(ops[1]), head.val(ops[2])
        for t in group[1:]:
            if t.val(ops[1]) != da or t.val(ops[2]) != db:
                raise SimError("wgmma descriptors differ across the warpgroup")
        A = self._operand(da, 64, k, fa)
        B = self._operand(db, n, k, fb)
        open_ = self.groups.setdefault(head.lin // 128, [[]])[0]
        for d, rows in ((da, 64), (db, n)):      # the rows it reads, until retired
            row = 16 * SWIZZLE_WIDTH[fields(d)["layout"]]
            lo = (self.window + ((d & 0x3FFF) << 4)) & -row
            open_.append((lo, lo + rows * row))
        prod = A @ B.T
        keep = head.val(ops[3]) != 0
        for t in group:
            regs = t.vec(ops[0])
            new = accumulators(prod, t.lin)
            if keep:
                old = np.array([t.val(r) & 0xFFFFFFFF for r in regs], np.uint32)
                new = old.view(np.float32).astype(np.float64) + new
            for r, v in zip(regs, new.astype(np.float32).view(np.uint32).tolist()):
                t.regs[r] = v
        assert len(acc_regs) == n // 2
