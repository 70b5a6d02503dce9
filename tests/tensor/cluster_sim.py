"""Clusters of 2 workgroups on the CPU pipeline interpreter (tests only): wgmma_sim.PipelineSim
with the two workgroups of a cluster run at once, each with its own shared memory, written
from the PTX ISA's descriptions of the cluster instructions, not from the compiler:

- the grid's x extent is a multiple of 2 (`.reqnctapercluster 2, 1, 1`); workgroups
  (2i, y, z) and (2i + 1, y, z) form a cluster. `%cluster_ctarank` and `%cluster_ctaid.x`
  are ctaid.x mod 2, `%clusterid.x` ctaid.x / 2, `%nclusterid.x` nctaid.x / 2,
  `%cluster_nctaid.x` and `%cluster_nctarank` 2, `%smid` the rank (each workgroup of a
  cluster on its own multiprocessor, so each has its own tensor-map slot);
- the threads of both workgroups are interleaved: with a seed, every runnable thread runs
  a random number of instructions (1..SLICE) in a random order, then the next round; at
  random one warpgroup (of either workgroup) stalls for up to STALL_ROUNDS rounds while
  the others run on (as long as another has a runnable thread), so any role of either
  workgroup may fall far behind; a pending copy
  lands between slices at random, as well as when every thread waits;
- shared memory is one flat address per byte (each workgroup's arrays and extern ring at
  their own addresses), so a `.shared::cta` address is also its `.shared::cluster` one;
  `mapa.shared::cluster` maps an address inside one workgroup's array (or ring) to the
  same offset of the same array in workgroup `rank`; `ld.shared::cluster` reads through
  it; `mbarrier.arrive.release.cluster.shared::cluster` arrives on whichever workgroup's
  barrier the address names (a remote arrive);
- `barrier.cluster.arrive` records the thread's arrival in the current phase (a second
  arrive before its wait is an error); `barrier.cluster.wait` returns once every thread of
  both workgroups arrived in that phase (a thread that exited without arriving leaves the
  waiters deadlocked);
- `cp.async.bulk.tensor...multicast::cluster` with a ctaMask: the box lands in every
  masked workgroup's shared memory at the issuing address's offset and completes its
  bytes on the barrier at the barrier operand's offset in each of them; each landing is
  its own pending copy (random, independent times);
- errors: a landing on rows an unretired wgmma group reads (in either workgroup), a
  landing on rows an earlier landing put there that no wgmma has read yet (a stage
  refilled before its consumers read it; a row one of two readers has read passes), a
  landing into or an access to a workgroup that has exited, a deadlock.
Memory ordering (release/acquire) is not modelled: every access is seen at once."""
from __future__ import annotations


import numpy as np

from toolchain.compiler.targets.ptx.instr import Addr

from .ptx_sim import SimError, Thread
from .wgmma_sim import WINDOW, PipelineSim

SIZE = 2                                    # workgroups per cluster (along x)
SLICE = 48                                  # most instructions a thread runs in a slice
LAND_CHANCE = 0.15                          # a pending copy lands after a slice
STALL_CHANCE = 0.2                          # a round starts a stall of one warpgroup
STALL_ROUNDS = 40                           # of at most this many rounds


class _Cta:
    def __init__(self, rank: int, ctaid, threads, shared, window, regions):
        self.rank, self.ctaid, self.threads, self.shared = rank, ctaid, threads, shared
        self.window, self.regions = window, regions
        self.groups: dict[int, list] = {}
        self.exited = False


class ClusterSim(PipelineSim):
    def __init__(self, ptx, kernel: str, dyn_bytes: int, undefined: int | None = None,
                 seed: int | None = None):
        super().__init__(ptx, kernel, dyn_bytes, undefined, seed)
        self.clusters = 0
        self.multicasts = 0                 # multicast copies issued
        self.remote_arrives = 0             # arrives on the other workgroup's barriers

    def run(self, grid, block, args):
        gx = grid if isinstance(grid, int) else grid[0]
        if gx % SIZE:
            raise SimError(f"grid x {gx} is not a multiple of the cluster size {SIZE}")
        self._queued = []
        return super().run(grid, block, args)

    def special(self, th, name: str):
        x = th.ctaid[0]
        cluster = {"%cluster_ctarank": x % SIZE, "%cluster_ctaid.x": x % SIZE,
                   "%clusterid.x": x // SIZE, "%nclusterid.x": self.grid[0] // SIZE,
                   "%cluster_nctaid.x": SIZE, "%cluster_nctarank": SIZE,
                   "%smid": x % SIZE}
        if name in cluster:
            return cluster[name]
        return super().special(th, name)

    # ---- the cluster: both workgroups set up, then run interleaved
    def _block(self, ctaid) -> None:
        self._queued.append(ctaid)
        if len(self._queued) == SIZE:          # by rank (reverse_x queues rank 1 first)
            ctas, self._queued = sorted(self._queued), []
            self._cluster(ctas)

    def _cluster(self, ctaids) -> None:
        if self._workspace is None:             # module scope: once per launch
            self._workspace = {n: self.mem.alloc(n, np.zeros(s, np.uint8))
                               for n, s in self.globals.items()}
        self.clusters += 1
        mem = self.mem
        self.bars, self.maps, self.pending, self.bulk = {}, {}, [], {}
        self.events, self._seen = 0, None
        self.unread: set[int] = set()           # 128-byte rows landed, not read yet
        self.cbar = {"phase": 0, "arrived": 0}
        bx, by, bz = self.block
        self.ctas = []
        for rank, ctaid in enumerate(ctaids):
            mem.data.extend(b"\0" * ((-len(mem.data)) % WINDOW))
            self.window = len(mem.data)
            mem.data.extend(b"\0" * (self.dyn_bytes + 256))
            shared = self._block_shared(ctaid)
            regions = {n: (shared[n], s) for n, s in self.shared_sizes.items()}
            regions.update({n: (self.window, self.dyn_bytes + 256) for n in self.extern})
            threads = [Thread(self, (x, y, z), (z * by + y) * bx + x, ctaid)
                       for z in range(bz) for y in range(by) for x in range(bx)]
            threads.sort(key=lambda t: t.lin)
            for t in threads:
                t.cta, t.carrive = rank, None
            self.ctas.append(_Cta(rank, ctaid, threads, shared, self.window, regions))
        everyone = [t for c in self.ctas for t in c.threads]
        rng = self.rng
        units = sorted({(t.cta, t.lin // 128) for t in everyone})   # warpgroups
        stalled, stall = None, 0
        while True:
            runnable = [t for t in everyone if not t.done and t.wait is None]
            order = runnable
            if rng is not None:
                if stall <= 0 and runnable and rng.random() < STALL_CHANCE:
                    stalled = rng.choice(units)
                    stall = rng.randint(1, STALL_ROUNDS)
                if stall > 0:
                    stall -= 1
                    order = [t for t in runnable if (t.cta, t.lin // 128) != stalled]
                rng.shuffle(order)
            if order:
                for th in order:
                    self._enter(th.cta)
                    budget = rng.randint(1, SLICE) if rng is not None else -1
                    while not th.done and th.wait is None and budget:
                        self._step(th)
                        budget -= 1
                    self._note_exits()
                    if self.pending and rng is not None and rng.random() < LAND_CHANCE:
                        self._land(self.pending.pop(rng.randrange(len(self.pending))))
                continue
            live = [t for t in everyone if not t.done]
            if not live:
                break
            if any(self._ready(c, live) for c in self.ctas):
                continue
            if runnable:                        # only the stalled warpgroup could run
                if not self._progress_without(live):
                    stall = 0
                continue
            if not self._land_or_retry(live):
                raise SimError("deadlock: threads wait at different collectives: " +
                               str(sorted({(t.cta, t.pc) for t in live})))
        if self.pending:
            raise SimError("the cluster exited with copies still in flight")
        self._drain_stores()

    def _progress_without(self, live) -> bool:
        """While a warpgroup stalls and every other thread waits: land a pending copy, or
        retry the mbarrier waiters if a barrier changed since their last try; False when
        neither can happen (the stall ends)."""
        waiting = [t for t in live if t.wait == "mbar"]
        if self.pending:
            self._land(self.pending.pop(self.rng.randrange(len(self.pending))))
        elif not waiting or self.events == self._seen:
            return False
        self._seen = self.events
        for t in waiting:
            t.wait = None
        return True

    def _ready(self, cta: _Cta, live) -> bool:
        self._enter(cta.rank)
        return self._ready_collective([t for t in live if t.cta == cta.rank])

    def _enter(self, rank: int) -> None:
        """Make workgroup `rank` the current one for the single-workgroup machinery."""
        c = self.ctas[rank]
        self.threads, self.shared, self.window, self.groups = \
            c.threads, c.shared, c.window, c.groups

    def _note_exits(self) -> None:
        for c in self.ctas:
            if not c.exited and all(t.done for t in c.threads):
                c.exited = True

    # ---- cluster instructions
    def _step(self, th) -> None:
        own = self._own_op(th, ("barrier.cluster.", "mapa.", "ld.shared::cluster"))
        if own is None:
            super()._step(th)
            return
        self.steps += 1
        self._cluster_op(th, *own)

    def _cluster_op(self, th, op: str, ops) -> None:
        if op.startswith("ld.shared::cluster"):
            self._owner(th.addr(ops[1]))            # must name cluster shared memory
            th.pc += 1
            self._ld(th, op.split("."), ops)
            return
        if op.startswith("mapa."):
            th.regs[ops[0]] = self._mapa(th.val(ops[1]), th.val(ops[2]))
            th.pc += 1
            return
        if op.startswith("barrier.cluster.arrive"):
            if th.carrive is not None:
                raise SimError("barrier.cluster.arrive twice without a wait between")
            th.carrive = self.cbar["phase"]
            self.cbar["arrived"] += 1
            self.events += 1
            if self.cbar["arrived"] == sum(len(c.threads) for c in self.ctas):
                self.cbar["phase"] += 1
                self.cbar["arrived"] = 0
            th.pc += 1
            return
        if op.startswith("barrier.cluster.wait"):
            if th.carrive is None:
                raise SimError("barrier.cluster.wait without an arrive")
            if self.cbar["phase"] > th.carrive:
                th.carrive = None
                th.pc += 1
            else:
                th.wait = "mbar"                # retried like a failed try_wait
            return
        raise SimError(f"unsupported cluster instruction {op}")

    def _owner(self, addr: int) -> tuple[int, str, int]:
        """(rank, array, offset) of a shared address of this cluster."""
        for c in self.ctas:
            for name, (base, size) in c.regions.items():
                if base <= addr < base + size:
                    if c.exited:
                        raise SimError(f"access to the shared memory of workgroup {c.rank}, "
                                       "which has exited")
                    return c.rank, name, addr - base
        raise SimError(f"{addr:#x} is not shared memory of this cluster")

    def _mapa(self, addr: int, rank: int) -> int:
        if not 0 <= rank < SIZE:
            raise SimError(f"mapa to rank {rank} outside the cluster")
        _, name, off = self._owner(addr)
        return self.ctas[rank].regions[name][0] + off

    def _mbarrier(self, th, op: str, ops) -> None:
        if ".shared::cluster" in op:
            rank, _, _ = self._owner(th.addr(ops[1]))
            self.remote_arrives += rank != th.cta
        super()._mbarrier(th, op, ops)

    def _pipeline_op(self, th, op: str, ops) -> None:
        if op.startswith("cp.async.bulk.tensor") and op.endswith(".multicast::cluster"):
            th.pc += 1
            mask = th.val(ops[3]) & 0xFFFF
            if mask == 0 or mask >> SIZE:
                raise SimError(f"multicast ctaMask {mask:#x} outside the cluster of {SIZE}")
            dst, bar = th.addr(ops[0]), th.addr(ops[2])
            self.multicasts += 1
            for rank in range(SIZE):
                if mask >> rank & 1:
                    self._copy(th, [Addr(str(self._mapa(dst, rank))), ops[1],
                                    Addr(str(self._mapa(bar, rank)))])
            return
        if op.startswith(("cp.async.bulk.tensor.2d.global.shared::cta",
                          "cp.async.bulk.tensor.3d.global.shared::cta")):
            rank, _, _ = self._owner(th.addr(ops[1]))
            if rank != th.cta:
                raise SimError("a store from the other workgroup's shared memory")
        elif op.startswith("cp.async.bulk.tensor"):
            rank, _, _ = self._owner(th.addr(ops[0]))
            if rank != th.cta:
                raise SimError("a non-multicast copy into the other workgroup")
        super()._pipeline_op(th, op, ops)

    # ---- copies and wgmma across the two workgroups
    def _land(self, copy) -> None:
        at, values, bar, nbytes, (lo, hi) = copy
        rank, _, _ = self._owner(lo)            # raises if that workgroup has exited
        rows = set(range(lo // 128, hi // 128))
        if rows & self.unread:
            raise SimError(f"a copy lands on rows of workgroup {rank} that an earlier copy "
                           "filled and no wgmma has read yet (a stage refilled before "
                           "its consumers read it)")
        mine = self.groups
        self.groups = {(c.rank, wg): g for c in self.ctas for wg, g in c.groups.items()}
        try:
            super()._land(copy)                 # the unretired-group check, both workgroups
        finally:
            self.groups = mine
        self.unread |= rows

    def _wgmma(self, group) -> None:
        head = group[0]
        open_ = self.groups.setdefault(head.lin // 128, [[]])[0]
        before = len(open_)
        super()._wgmma(group)
        for lo, hi in open_[before:]:
            self.unread -= set(range(lo // 128, hi // 128))
