"""frag_sim extended with the sm_90a warpgroup MMA for register-resident tiles (tests only):
`wgmma.mma_async m64nNk16` with A from registers or a descriptor and B from a descriptor,
its fences, groups and the async proxy. Written from the PTX ISA ("Asynchronous Warpgroup
Level Matrix Multiply-Accumulate" and "Memory Consistency Model: proxies") and the CUTLASS
headers (cute/arch/mma_sm90_gmma.hpp: the operand lists; cute/atom/mma_traits_sm90_gmma.hpp:
ALayout_64x16 and CLayout_64xN), never from the compiler. The model:

- `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}` is a warpgroup
  collective: the 128 threads of warps 4g..4g+3 all reach the same instruction (a partial
  warpgroup or another instruction is an error). Operand lists (mma_sm90_gmma.hpp):
  RS `d, {a0..a3}, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b` and
  SS `d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b`;
  scale-d is a predicate or an immediate (D = A·B + D when true, A·B when false),
  imm-scale-a/b are +1/-1 (negate the operand), imm-trans 0 reads the operand K-major, 1
  MN-major. Descriptors and scale-d must agree across the warpgroup.
- A from registers (ALayout_64x16 = ((4,8,4),(2,2,2)):((128,1,16),(64,8,512)) over
  (m + 64 k)): register i, half e (low first) of lane l in warp w holds row
  16w + l/4 + 8(i%2), column 2(l%4) + e + 8(i/2). D (CLayout_64xN =
  ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))): register 4j + 2h + e holds row
  16w + l/4 + 8h, column 8j + 2(l%4) + e. Shared operands: wgmma_desc.py.
- Arithmetic: the exact 16-bit inputs, the product in float64 plus D (f32, widened), one
  rounding to f32 (nearest even). The hardware's order and internal precision differ; on
  the small integers the tests use every order is exact.
- Asynchrony: operands are read at issue and D is written when the wgmma retires:
  `wgmma.commit_group` closes the thread's open group, `wgmma.wait_group N` retires all but
  the N newest committed groups (an uncommitted wgmma is never retired). A later wgmma on
  the same accumulators chains onto the unretired result (the ISA orders same-shape
  accumulator accesses; another shape is an error). Errors: an ordinary instruction that
  reads or writes a D or A register of an unretired wgmma; a wgmma whose A or D registers
  an ordinary instruction accessed since the thread's last `wgmma.fence.sync.aligned`, or
  with no fence before it at all (the ISA: "between a register access by a thread in the
  warpgroup and any wgmma.mma_async instruction that accesses the same registers"); a
  store or a landing cp.async into shared bytes an unretired wgmma reads.
- Proxies: a shared byte written through the generic proxy (`st`, the cp.async copies
  when they land) is visible to wgmma (the async proxy) only after its writer executes
  `fence.proxy.async[.shared::cta]` after the write landed and then a CTA barrier
  (`bar.sync`) completes, ordering the fence before the other threads' wgmma. A wgmma
  reading a byte short of either is an error.
- Shared memory: the static `.shared` arrays live in a 256 KiB window at 2^18 (the
  descriptor's 14-bit address field, modulo 256 KiB, names the right bytes; an unmasked
  address only sets the descriptor's unused bits 14-15), each at an offset aligned to its
  declared `.align` but deliberately not to twice it, so a tile relying on more alignment
  than it declares reads the wrong pattern; they start as 0xFF bytes (an f16/bf16 NaN),
  so reading bytes nobody wrote shows; more than 48 KiB of static arrays is an error
  (ptxas rejects it). The `.extern .shared` arena (the kernel's dynamic workgroup memory)
  follows them the same way, `dynamic` bytes of it (run's argument, also
  `%dynamic_smem_size`); an access past them is an error, and so is `trap`.
"""
from __future__ import annotations

import re

import numpy as np

from toolchain.compiler.targets.ptx.instr import Addr, PtxModule, Vec
from toolchain.compiler.targets.ptx.parse import parse_module

from .frag_sim import FragSim
from .ptx_sim import Memory, SimError, bf16_val, f16_val
from .wgmma_desc import WINDOW, accumulators, operand, values

_SHARED = re.compile(r"^\s*\.shared\s+(?:\.align\s+(\d+)\s+)?\.b8\s+(\w+)\[(\d+)\]")
_EXTERN = re.compile(r"^\s*\.extern\s+\.shared\s+(?:\.align\s+(\d+)\s+)?\.b8\s+(\w+)\[\]")
_WGMMA = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(f16|bf16)\.(f16|bf16)")
STATIC_LIMIT = 48 * 1024
POISON = 0xFF


class _ShadowMemory(Memory):
    """The flat memory with the shared window at [2^18, 2^19); stores into it are reported
    to the simulator (generic-proxy writes)."""

    def __init__(self, sim):
        super().__init__()
        self.data.extend(b"\0" * (2 * WINDOW - len(self.data)))
        self.sim = sim

    def store(self, addr: int, size: int, value: int) -> None:
        if WINDOW <= addr < 2 * WINDOW:
            self.sim._generic_write(addr - WINDOW, size)
        super().store(addr, size, value)


class _Wgmma:
    """One issued wgmma: the shared bytes it reads (window offsets), until it retires."""
    __slots__ = ("reads", "released", "n")

    def __init__(self, reads: np.ndarray, n: int):
        self.reads, self.released, self.n = reads, False, n


def _operand_regs(ops) -> set[str]:
    out = set()
    for o in ops:
        if isinstance(o, Vec):
            out.update(r for r in o.regs if r.startswith("%"))
        elif isinstance(o, Addr):
            if o.base.startswith("%"):
                out.add(o.base)
        elif isinstance(o, str) and o.startswith("%"):
            out.add(o)
    return out


class WgFragSim(FragSim):
    def __init__(self, ptx, kernel: str, poison: bool = True):
        """`ptx`: compiled objects (a PtxModule) or hand-written PTX text."""
        module = ptx if isinstance(ptx, PtxModule) else parse_module(ptx)
        super().__init__(module, kernel)
        decls = (list(module.decls) + list(module.function(kernel).decls)
                 if isinstance(ptx, PtxModule) else ptx.splitlines())
        arrays = [(m.group(2), int(m.group(3)), int(m.group(1) or 1)) for d in decls
                  for m in [_SHARED.search(d)] if m]
        self.shared_sizes = {name: size for name, size, _ in arrays}
        self.shared_offsets, packed, at = {}, 0, 0
        for name, size, align in arrays:
            packed = -(-packed // align) * align + size
            at = -(-at // align) * align
            if at % (2 * align) == 0:           # aligned to the declared .align, not twice it
                at += align
            self.shared_offsets[name] = at
            at += size
        if packed > STATIC_LIMIT:
            raise SimError(f"{packed} bytes of static shared memory: over 48 KiB")
        self.shared_end = at
        self.extern = [(m.group(2), int(m.group(1) or 1)) for d in decls
                       for m in [_EXTERN.search(d)] if m]
        self.dynamic = 0
        self.arena = None               # the arena's (first, end) window offsets, per block
        self.poison = poison
        self.wgmmas = 0
        wg_regs = set()
        for _, _, op, ops in self.code:
            if op.startswith("wgmma.mma_async"):
                wg_regs |= _operand_regs(ops[:1] + ([ops[1]] if isinstance(ops[1], Vec)
                                                    else []))
        self.regs_at = [frozenset(_operand_regs(ops) & wg_regs)
                        if not op.startswith("wgmma.") else frozenset()
                        for _, _, op, ops in self.code]

    def _new_memory(self) -> Memory:
        return _ShadowMemory(self)

    def _block(self, ctaid) -> None:
        self.unfenced = np.full(WINDOW, -1, np.int32)     # writer of an unfenced byte
        self.fenced_at = np.full(WINDOW, -1, np.int64)    # barriers completed at its fence
        self.reading = np.zeros(WINDOW, np.int32)         # unretired wgmmas reading a byte
        self.barriers = 0
        self.to_fence: dict[int, list] = {}               # thread -> its unfenced writes
        self.touched: dict[int, set] = {}                 # D/A registers since wgmma.fence
        self.fenced: set[int] = set()                     # threads past a wgmma.fence
        self.open: dict[int, list] = {}                   # thread -> uncommitted wgmmas
        self.committed: dict[int, list] = {}              # thread -> groups, oldest first
        self.inflight: dict[int, dict] = {}               # thread -> reg -> (shape, value)
        self._cur = None
        super()._block(ctaid)

    def run(self, grid, block, args, dynamic: int = 0):
        """`dynamic`: the launch's bytes of dynamic workgroup memory."""
        self.dynamic = dynamic
        return super().run(grid, block, args)

    def special(self, th, name: str):
        if name == "%dynamic_smem_size":
            return self.dynamic
        return super().special(th, name)

    def _block_shared(self, ctaid) -> dict:
        self.mem.data[WINDOW:2 * WINDOW] = bytes([POISON if self.poison else 0]) * WINDOW
        places = {name: WINDOW + off for name, off in self.shared_offsets.items()}
        at = self.shared_end
        for name, align in self.extern:         # one arena, after the static arrays
            at = -(-at // align) * align
            if at % (2 * align) == 0:
                at += align
            places[name] = WINDOW + at
            self.arena = (at, at + self.dynamic)
        return places

    # ---- the generic proxy
    def _end(self) -> int:
        """The end of the bytes the workgroup owns in the window."""
        return self.arena[1] if self.arena else self.shared_end

    def _generic_write(self, off: int, size: int) -> None:
        if off + size > self._end():
            raise SimError(f"a store to shared bytes {off:#x}..{off + size:#x}, past the "
                           f"workgroup's memory (end {self._end():#x})")
        if self.reading[off:off + size].any():
            raise SimError(f"a store lands on shared bytes {off:#x}..{off + size:#x} that an "
                           "unretired wgmma reads (wait_group before overwriting)")
        lin = self._cur.lin
        self.unfenced[off:off + size] = lin
        self.to_fence.setdefault(lin, []).append((off, size))

    def _proxy_fence(self, th) -> None:
        for off, size in self.to_fence.pop(th.lin, []):
            mine = off + np.flatnonzero(self.unfenced[off:off + size] == th.lin)
            self.unfenced[mine] = -1
            self.fenced_at[mine] = self.barriers

    def _async_read(self, at: np.ndarray) -> np.ndarray:
        if at.min() < 0 or at.max() >= self._end():
            raise SimError(f"wgmma reads shared offsets {at.min():#x}..{at.max():#x} outside "
                           f"the workgroup's memory (0..{self._end():#x})")
        flat = at.ravel()
        if (self.unfenced[flat] >= 0).any():
            bad = flat[self.unfenced[flat] >= 0][0]
            raise SimError(f"generic-proxy write not fenced: shared byte {bad:#x} written by "
                           f"thread {self.unfenced[bad]} without fence.proxy.async before "
                           "the wgmma reading it")
        if (self.fenced_at[flat] >= self.barriers).any():
            bad = flat[self.fenced_at[flat] >= self.barriers][0]
            raise SimError(f"shared byte {bad:#x}: its writer's fence.proxy.async is not "
                           "followed by a barrier before the wgmma reading it")
        return np.frombuffer(self.mem.data, np.uint8)[WINDOW + at]

    # ---- stepping: register hazards, the wgmma bookkeeping instructions, proxy fences
    def _step(self, th) -> None:
        self._cur = th
        if th.pc < len(self.code):
            guard, negated, op, ops = self.code[th.pc]
            if guard is None or bool(th.val(guard)) != negated:
                if op.startswith(("wgmma.", "fence.")):
                    self.steps += 1
                    self._wg_op(th, op, ops)
                    return
                if op == "trap":
                    raise SimError(f"trap at pc {th.pc} (thread {th.lin})")
                regs = self.regs_at[th.pc]
                if regs:
                    live = self.inflight.get(th.lin)
                    if live and regs & live.keys():
                        raise SimError(
                            f"{op} at pc {th.pc} accesses {sorted(regs & live.keys())}, "
                            "registers of a wgmma not yet retired by wgmma.wait_group")
                    self.touched.setdefault(th.lin, set()).update(regs)
        super()._step(th)

    def _wg_op(self, th, op: str, ops) -> None:
        if op.startswith("wgmma.mma_async"):
            th.wait = "wgmma"                      # a warpgroup collective
            return
        th.pc += 1
        if op == "wgmma.fence.sync.aligned":
            self.fenced.add(th.lin)
            self.touched[th.lin] = set()
        elif op == "wgmma.commit_group.sync.aligned":
            self.committed.setdefault(th.lin, []).append(self.open.pop(th.lin, []))
        elif op == "wgmma.wait_group.sync.aligned":
            self._retire(th, int(th.val(ops[0])))
        elif op in ("fence.proxy.async", "fence.proxy.async.shared::cta"):
            self._proxy_fence(th)
        else:
            raise SimError(f"unsupported instruction {op}")

    def _retire(self, th, keep: int) -> None:
        groups = self.committed.get(th.lin, [])
        cut = max(len(groups) - keep, 0)
        for group in groups[:cut]:
            for rec, results, _ in group:
                th.regs.update(results)
                if not rec.released:               # the warpgroup's wgmma has completed
                    rec.released = True
                    np.subtract.at(self.reading, rec.reads, 1)
        self.committed[th.lin] = groups[cut:]
        live = {}
        for rec, results, aregs in [e for g in groups[cut:] for e in g] + \
                self.open.get(th.lin, []):
            live.update({r: (rec.n, None) for r in aregs})
            live.update({r: (rec.n, v) for r, v in results.items()})
        self.inflight[th.lin] = live

    def _collective(self, live) -> bool:
        for th in live:
            if th.wait != "wgmma":
                continue
            base = th.lin - th.lin % 128
            group = [t for t in self.threads[base:base + 128] if not t.done]
            if not all(t.wait == "wgmma" for t in group):
                continue
            if len(group) != 128:
                raise SimError("wgmma with a partial warpgroup")
            if any(t.pc != th.pc for t in group):
                raise SimError("the warpgroup's threads wait at different wgmma instructions")
            self._wgmma(group)
            for t in group:
                t.wait, t.pc = None, t.pc + 1
            return True
        at_barrier = [t for t in live if t.wait == "bar.sync"]
        if not super()._collective(live):
            return False
        if at_barrier and all(t.wait is None for t in at_barrier):
            self.barriers += 1
        return True

    # ---- the wgmma itself
    def _wgmma(self, group) -> None:
        head = group[0]
        _, _, op, ops = self.code[head.pc]
        m = _WGMMA.fullmatch(op)
        if not m or m.group(2) != m.group(3):
            raise SimError(f"unsupported {op}")
        n, fmt = int(m.group(1)), m.group(2)
        rs = isinstance(ops[1], Vec)
        if n % 8 or not 8 <= n <= 256 or len(ops) != (7 if rs else 8):
            raise SimError(f"{op}: shape or operand count")
        imms = []
        for o in ops[4:]:
            if not re.fullmatch(r"-?\d+", str(o)):
                raise SimError(f"{op}: {o} must be an immediate")
            imms.append(int(o))
        sa, sb, *trans = imms
        trans_a, trans_b = (0, trans[0]) if rs else trans
        if sa not in (1, -1) or sb not in (1, -1) or {trans_a, trans_b} - {0, 1}:
            raise SimError(f"{op}: imm-scale-a/b must be +-1 and imm-trans 0 or 1")
        dregs = head.vec(ops[0])
        if len(dregs) != n // 2 or (rs and len(head.vec(ops[1])) != 4):
            raise SimError(f"{op}: {len(dregs)} accumulators (want {n // 2})")
        shared = [head.val(o) for o in ops[1 + rs:4]]
        for t in group:
            if [t.val(o) for o in ops[1 + rs:4]] != shared:
                raise SimError("wgmma descriptors or scale-d differ across the warpgroup")
        *descs, scale_d = shared
        for t in group:
            self._check_fence(t, op, dregs, list(t.vec(ops[1])) if rs else [], n)
        reads = []
        read = (lambda at: (reads.append(at.ravel()), self._async_read(at))[1])
        B = values(operand(read, descs[-1], n, 16, 2, mn_major=bool(trans_b)), fmt)
        A = values(operand(read, descs[0], 64, 16, 2, mn_major=bool(trans_a)), fmt) \
            if not rs else self._reg_a(group, ops[1], fmt)
        prod = (sa * A) @ (sb * B).T
        rec = _Wgmma(np.unique(np.concatenate(reads)), n)
        np.add.at(self.reading, rec.reads, 1)
        self.wgmmas += 1
        for t in group:
            new = accumulators(prod, t.lin)
            if scale_d:
                live = self.inflight.get(t.lin, {})
                old = np.array([live[r][1] if r in live else t.val(r) & 0xFFFFFFFF
                                for r in dregs], np.uint32)
                new = new + old.view(np.float32).astype(np.float64)
            results = dict(zip(dregs, new.astype(np.float32).view(np.uint32).tolist()))
            aregs = list(t.vec(ops[1])) if rs else []
            self.open.setdefault(t.lin, []).append((rec, results, aregs))
            live = self.inflight.setdefault(t.lin, {})
            live.update({r: (n, None) for r in aregs})
            live.update({r: (n, v) for r, v in results.items()})

    def _check_fence(self, t, op: str, dregs: list[str], aregs: list[str], n: int) -> None:
        if t.lin not in self.fenced:
            raise SimError(f"thread {t.lin}: {op} without a wgmma.fence before the first "
                           "wgmma")
        stale = self.touched.get(t.lin, set()).intersection(dregs + aregs)
        if stale:
            raise SimError(f"thread {t.lin}: missing wgmma.fence: {sorted(stale)[:4]} "
                           "accessed by ordinary instructions since the last wgmma.fence")
        live = self.inflight.get(t.lin, {})
        other = [r for r in dregs if r in live and live[r][0] != n]
        if other:
            raise SimError(f"thread {t.lin}: {other[:4]} belong to an unretired wgmma of "
                           "another shape")

    def _reg_a(self, group, vec, fmt: str) -> np.ndarray:
        val = f16_val if fmt == "f16" else bf16_val
        A = np.zeros((64, 16))
        for t in group:
            w, lane = (t.lin % 128) // 32, t.lin % 32
            for i, r in enumerate(t.vec(vec)):
                word = t.val(r)
                for e in range(2):
                    A[16 * w + lane // 4 + 8 * (i % 2),
                      2 * (lane % 4) + e + 8 * (i // 2)] = val(word >> (16 * e))
        return A


def run_wgfrag(objects, kernel: str, block: int, args, grid=1):
    """Run `kernel` (compiled PTX objects or PTX text) and return the Memory (SimError on
    anything the interpreter does not model or a synchronisation the kernel misses)."""
    return WgFragSim(objects, kernel).run(grid, block, args)


__all__ = ["WgFragSim", "run_wgfrag"]
