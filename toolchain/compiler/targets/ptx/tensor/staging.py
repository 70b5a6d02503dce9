"""Staged operand loads for resident stable-WMMA groups (K loops and chains, issue 18).

ptxas turns `wmma.load.{a,b}...global.f16` of a 16x16 tile into four 32-bit loads per lane
(sm_90a SASS: LDG.E), each spanning eight rows, so eight 128-byte lines per instruction;
the K-loop GEMM is thought to be bound by those L1 look-ups (gpu.md), not by loads in
flight. Staged instead, each lane loads one 16-byte piece of the tile (row = lane>>1,
half = lane&1) with one `ld.v4.u32`, stores it to its warp's private shared-memory slot
(16 rows of 32 bytes), and the warp reads the fragment back with the same stable
`wmma.load`, now from `.shared` with the dense stride 16 (SASS: LDG.E.128, STS.128, LDSM).
No fragment layout is assumed: the data and the MMAs are those of the direct form, so both
give bitwise identical results.

Used when: `--gpu-wmma-staging` is on (the default), sm_80 or newer, the function is a
kernel (the static `.shared` area is warps x 2 x 512 bytes, at most 16 KiB: 512 work-items,
for the declared block shape; see below for a kernel without one), the group is one
f16/bf16 m16n16k16 physical tile per K
chunk, and A and B are global (or generic) memory. Each update then tests at run time,
uniformly for the warp (WMMA operands are warp-uniform), that both operand addresses are
16-byte aligned and both leading dimensions are multiples of 8 elements (16 bytes: the K
advance keeps this); otherwise that update takes the direct loads. Two `bar.warp.sync` per
chunk: before the slot is rewritten (the previous chunk's wmma.load is done) and before it
is read.

Pipelined (the default where it fits): the lanes copy their pieces with `cp.async` (no
register round trip) into one of two stages per warp, and each update runs the MMA of the
step copied by the *previous* update while its own copies are in flight: update k issues
step k into stage k%2, waits for step k-1 (`cp.async.wait_group 1`) and multiplies it;
whoever reads the accumulator next (the group's store or a fused epilogue) first multiplies
the last copied step (`settle`). Every MMA still runs once, in program order, on the same
data, so results stay bitwise identical to the direct form. Two run-time registers carry the
state across iterations: which stage the next copy fills, and whether a copied step awaits
its MMA (a direct update settles it first). A is copied with `.ca` (kept in L1) and B with
`.cg` (L2 only): with one subgroup per C tile and tiles numbered along a row, the subgroups
of a workgroup read the same A tile and different B columns, so only A is re-read from L1
(H200, plainperf2 probe call, a hand-made prototype of this form on the 4096^3 K-loop GEMM:
46.9 TFLOP/s against 35.7 with both `.cg` and 32.8 for the synchronous form; `.ca` for
both measured 30.7 with three stages; bench/results/plain_probe_h200.txt). A pipelined
group has its own area (two 1 KiB stages per warp); the synchronous form is kept when the
function already uses async copy groups (its wait counts are the user's), when a pipelined
area would take the kernel's staging memory over MAX_AREA, or with PIPELINE off (A/B runs).
A group whose synchronous area would do that too (earlier groups' areas counted, as they
are against STATIC_SHARED) keeps the direct loads.

A kernel without a declared block shape (the plain-source K loop: a subgroup per tile, no
annotation) is staged for the subgroups per workgroup its own tile index names
(`block.x * C + thread.x / 32`: C subgroups, block_hint.py), else for UNDECLARED_ITEMS
work-items, at most UNDECLARED_CAP; the linear thread id and the block size come from
%tid/%ntid, and the run-time test of every update also takes the direct loads in a subgroup
past the areas (linear id / 32 >= C) and in a launch with a partial subgroup. Both tests are
uniform in the subgroup and both forms give the same bits, so a larger block mixes staged
and direct subgroups safely. Why size for the expected block rather than the largest: the
area is static and paid per workgroup whatever the launch. Sized for 256 work-items, the
128-work-item K loop ran at 37.1 TFLOP/s against the declared form's 46.4 (H200) with the
same SASS loop; the difference was the area (16 against 8 KiB), which at the loop's
register-limited 12 workgroups an SM takes the shared-memory carveout to 228 KiB and leaves
28 KiB of L1 for the `.ca` A tiles the pipelined form relies on (declared: 132 KiB
carveout, 124 KiB of L1). bench/kloop_held.py times both sizings. The area is static,
so any launcher (the Python runtime, a host program, raw cuLaunchKernel) gets the staged
form without passing dynamic shared memory. Areas never take the kernel's static shared
memory (its own workgroup arrays included) over STATIC_SHARED: the pipelined form falls
back to the synchronous one, that one to the direct loads.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as I
from .block_hint import subgroups_hint
from .common import Mat, add_addr, label, linear, offset_terms, scale_bytes
from .wmma import load_frag, mma, run_grid_on

SLOT = 512                         # one 16x16 16-bit tile: 16 rows of 32 bytes
STAGE = 2 * SLOT                   # A's and B's slot of one pipelined step
MAX_AREA = 16384                   # leaves >= 32 KiB of the 48 KiB static .shared to the kernel
PIPELINE = True                    # two-stage cp.async form where it fits (False: A/B runs)
CACHE = {"a": "ca", "b": "cg"}     # cp.async cache level per operand (docstring)
_SPACES = ("", ".global")          # operands worth staging (shared ones are already close)
HOIST_OFFSETS = False              # lane offsets before the run-time branch, where ptxas
                                   # hoists them out of the K loop (4 SASS a step fewer) but
                                   # the 128-item K loop takes 48 registers, not 40 (10
                                   # workgroups an SM, not 12): off until measured (A/B runs)
UNDECLARED_ITEMS = 128             # work-items an undeclared block's areas are sized for
                                   # when its tile index names no subgroup count
UNDECLARED_CAP = MAX_AREA // (2 * STAGE) * 32   # 256: the most a pipelined area serves
STATIC_SHARED = 48 * 1024          # the static .shared a kernel may declare in all


@dataclass
class Stage:
    slot_a: str                    # u32 .shared address of this warp's A slot
    slot_b: str
    lane_a: str                    # this lane's 16-byte piece in the A slot
    lane_b: str
    row: str                       # lane >> 1 (u32): the stored row this lane copies
    half: str                      # (lane & 1) * 16 (u64): its byte offset in the row
    unfit: str | None = None       # undeclared block: non-zero when the launch's block does
                                   # not fit the areas (every update then loads directly)
    buf: str | None = None         # pipelined: byte offset (0 / STAGE) the next copy fills
    pend: str | None = None        # pipelined: 1 while a copied step awaits its MMA
    plan: object = None            # pipelined: what settle() multiplies with
    desc: object = None
    acc: object = None


def why_not(em, plan, desc) -> str | None:
    """Why a resident WMMA group keeps today's direct loads (None: it is staged)."""
    fn = em.fn
    if not getattr(em.module, "wmma_staging", True):
        return "staging off (--gpu-wmma-staging=off)"
    if not em.profile.has("cp.async"):
        return f"{em.profile.target} is below sm_80"
    if not fn.is_kernel:
        return "not a kernel: no launch block shape for the shared staging slots"
    # the smallest staged form needs the synchronous area (one per function, shared by its
    # groups); earlier groups' areas count against both limits
    used = getattr(em, "wmma_stage_bytes", 0)
    need = 0 if getattr(em, "wmma_stage_area", None) else _size(fn)
    if _size(fn) > MAX_AREA:
        return f"a {_size(fn)}-byte staging area is over {MAX_AREA} bytes"
    if used + need > MAX_AREA:
        return (f"the {used} bytes of earlier groups' staging areas leave no room for a "
                f"{need}-byte area under {MAX_AREA} bytes")
    if _own_shared(fn) + used + need > STATIC_SHARED:
        earlier = f" and {used} bytes of earlier staging areas" if used else ""
        return (f"the kernel's {_own_shared(fn)} bytes of workgroup arrays{earlier} leave no "
                f"room for a {need}-byte staging area ({STATIC_SHARED} bytes of static "
                "shared memory)")
    if plan.family not in ("f16", "bf16") or tuple(plan.shape) != (16, 16, 16) or \
            tuple(plan.grid) != (1, 1):
        return "only one f16/bf16 m16n16k16 tile per chunk is staged"
    return None


def _own_shared(fn) -> int:
    """Bytes of the kernel's own workgroup arrays (static .shared beside the areas)."""
    return sum(i.attrs["elem"].size * int(i.attrs["count"]) for i in fn.instructions()
               if i.op == "gpu.alloc" and i.attrs["space"] == "workgroup")


def _items(fn) -> int:
    """Work-items the staging areas are sized for: the declared block, else the subgroups
    the kernel's tile index names (block_hint.py) or UNDECLARED_ITEMS, at most
    UNDECLARED_CAP (checked at run time against the launch)."""
    if not fn.block_shape:
        hint = subgroups_hint(fn)
        return min(hint * 32 if hint else UNDECLARED_ITEMS, UNDECLARED_CAP)
    x, y, z = fn.block_shape
    return x * y * z


def staged_subgroups(fn) -> int:
    """Subgroups per workgroup the areas serve (an undeclared block's later ones load
    directly)."""
    return (_items(fn) + 31) // 32


def form(em) -> str:
    """The explain text of how the areas were sized."""
    if em.fn.block_shape:
        return "sized from the declared block shape"
    hint = subgroups_hint(em.fn)
    n = staged_subgroups(em.fn)
    why = (f"the tile index block.x * {hint} + thread.x / 32" if hint else
           "no subgroup count in the tile index: the default")
    if hint and hint > n:
        why += f", capped at {n}"
    return (f"no declared block shape: sized for {n} subgroups ({why}), a run-time test "
            "loads directly in a subgroup past them or a launch with a partial subgroup")


def _size(fn, stages: int = 1) -> int:
    return (_items(fn) + 31) // 32 * stages * STAGE     # one A and one B slot per stage


def _area(em) -> str:
    """This kernel's synchronous staging area (one per function, shared by its groups)."""
    sym = getattr(em, "wmma_stage_area", None)
    if sym is None:
        sym = em.wmma_stage_area = em.module.shared_array(em.fn, "wmma_stage",
                                                          _size(em.fn), 128)
        _claim(em, _size(em.fn))
    return sym


def _claim(em, size: int) -> None:
    em.wmma_stage_bytes = getattr(em, "wmma_stage_bytes", 0) + size


def pipeline_why_not(em) -> str | None:
    """Why a staged group keeps the synchronous form (None: it is pipelined)."""
    if not PIPELINE:
        return "pipelining off"
    if any(i.op.startswith("async.") for b in em.fn.blocks for i in b.instrs):
        return "the function uses async copy groups itself"
    used = getattr(em, "wmma_stage_bytes", 0)
    if used + _size(em.fn, 2) > MAX_AREA:
        return f"another {_size(em.fn, 2)}-byte area would take staging over {MAX_AREA} bytes"
    if _own_shared(em.fn) + used + _size(em.fn, 2) > STATIC_SHARED:
        return (f"another {_size(em.fn, 2)}-byte area would take the kernel's static shared "
                f"memory over {STATIC_SHARED} bytes")
    return None


def prepare(em, plan, desc, acc, pipelined: bool) -> Stage:
    """This warp's slots and this lane's piece, computed once where C is loaded; a pipelined
    group gets its own two-stage area and its run-time state (stage 0 next, nothing
    pending)."""
    if pipelined:
        sym = em.module.shared_array(em.fn, "wmma_pipe", _size(em.fn, 2), 128)
        _claim(em, _size(em.fn, 2))
    else:
        sym = _area(em)
    unfit = None
    if em.fn.block_shape:
        x, y, z = em.fn.block_shape
        lin = em.new("r")                        # linear thread id; its warp is lin / 32
        em.put(I.mov("u32", lin, "%tid.x"))
        for sreg, extent, scale in (("%tid.y", y, x), ("%tid.z", z, x * y)):
            if extent > 1:
                t = em.new("r")
                em.put(I.mov("u32", t, sreg), I.mad("lo", "u32", lin, t, scale, lin))
    else:
        lin, unfit = _launch_geometry(em)
    warp, base, slot_a, slot_b = (em.new("r") for _ in range(4))
    lane, piece, lane_a, lane_b, row, h = (em.new("r") for _ in range(6))
    half = em.new("rd")
    em.put(I.binary("shr", "u32", warp, lin, 5), I.mov("u32", base, sym),
           I.mad("lo", "u32", slot_a, warp, (2 if pipelined else 1) * STAGE, base),
           I.binary("add", "u32", slot_b, slot_a, SLOT), I.binary("and", "b32", lane, lin, 31),
           I.binary("shl", "b32", piece, lane, 4),
           I.binary("add", "u32", lane_a, slot_a, piece),
           I.binary("add", "u32", lane_b, slot_b, piece),
           I.binary("shr", "u32", row, lane, 1), I.binary("and", "b32", h, lane, 1),
           I.binary("mul.wide", "u32", half, h, 16))
    st = Stage(slot_a, slot_b, lane_a, lane_b, row, half, unfit=unfit)
    if pipelined:
        st.buf, st.pend, st.plan, st.desc, st.acc = em.new("r"), em.new("r"), plan, desc, acc
        em.put(I.mov("u32", st.buf, 0), I.mov("u32", st.pend, 0))
    return st


def _launch_geometry(em) -> tuple[str, str]:
    """(linear thread id, unfit) of an undeclared block, from %tid and %ntid: unfit is
    non-zero in a subgroup past the areas (linear id >= 32 x staged_subgroups) and in a
    launch with a partial subgroup; both are uniform in the subgroup."""
    tid = [em.new("r") for _ in range(3)]
    nt = [em.new("r") for _ in range(3)]
    for d, r, n in zip("xyz", tid, nt):
        em.put(I.mov("u32", r, f"%tid.{d}"))
        em.put(I.mov("u32", n, f"%ntid.{d}"))
    lin, items, unfit, part = (em.new("r") for _ in range(4))
    past = em.new("p")
    em.put(I.mad("lo", "u32", lin, tid[2], nt[1], tid[1]))       # (z * ny + y) * nx + x
    em.put(I.mad("lo", "u32", lin, lin, nt[0], tid[0]))
    em.put(I.binary("mul.lo", "u32", items, nt[0], nt[1]))
    em.put(I.binary("mul.lo", "u32", items, items, nt[2]))
    em.put(I.setp("ge", "u32", past, lin, 32 * staged_subgroups(em.fn)))
    em.put(I.selp("u32", unfit, 1, 0, past))
    em.put(I.binary("and", "b32", part, items, 31))
    em.put(I.binary("or", "b32", unfit, unfit, part))
    return lin, unfit


def _static_ok(m: Mat) -> bool:
    return m.space in _SPACES and m.bits == 16 and (not isinstance(m.ld, int) or
                                                    m.ld % 8 == 0)


def _misaligned(em, st: Stage, A: Mat, B: Mat) -> str:
    """A uniform predicate: true when an operand base is not 16-byte aligned or a leading
    dimension is not a multiple of 8 elements (or an undeclared block does not fit)."""
    both, low = em.new("rd"), em.new("r")
    em.put(I.binary("or", "b64", both, A.base, B.base), I.cvt("u32", "u64", low, both),
           I.binary("and", "b32", low, low, 15))
    if st.unfit is not None:
        em.put(I.binary("or", "b32", low, low, st.unfit))
    lds = [m.ld for m in (A, B) if not isinstance(m.ld, int)]
    if lds:
        ld = lds[0]
        if len(lds) == 2:
            ld = em.new("r")
            em.put(I.binary("or", "b32", ld, lds[0], lds[1]))
        bad = em.new("r")
        em.put(I.binary("and", "b32", bad, ld, 7), I.binary("or", "b32", low, low, bad))
    p = em.new("p")
    em.put(I.setp("ne", "u32", p, low, 0))
    return p


def _lane_offset(em, st: Stage, m: Mat) -> str:
    """The byte offset of this lane's 16 bytes in the stored 16x16 tile (row st.row, half
    st.half) from the tile's address (HOIST_OFFSETS)."""
    off = _row_offset(em, st, m)
    em.put(I.binary("add", "s64", off, off, st.half))
    return off


def _row_offset(em, st: Stage, m: Mat) -> str:
    off = em.new("rd")
    if isinstance(m.ld, int):
        em.put(I.binary("mul.wide", "u32", off, st.row, m.ld * 2))
    else:
        em.put(I.binary("mul.wide", "u32", off, st.row, m.ld),
               I.binary("shl", "b64", off, off, 1))
    return off


def _lane_bases(em, st: Stage, A: Mat, B: Mat, offs) -> tuple[str, str]:
    """Per lane, A's and B's first chunk: its source address with hoisted offsets, else its
    lane-half address (row st.row added per chunk by _sources)."""
    a, b = em.new("rd"), em.new("rd")
    oa, ob = offs or (st.half, st.half)
    em.put(I.binary("add", "s64", a, A.base, oa), I.binary("add", "s64", b, B.base, ob))
    return a, b


def _sources(em, st: Stage, A: Mat, B: Mat, a: str, b: str, offs) -> tuple[str, str]:
    """This lane's 16-byte source addresses of the chunk whose lane bases are a and b."""
    if offs:
        return a, b
    srcs = []
    for m, base in ((A, a), (B, b)):
        off = _row_offset(em, st, m)
        addr = em.new("rd")
        em.put(I.binary("add", "s64", addr, base, off))
        srcs.append(addr)
    return srcs[0], srcs[1]


def _piece(em, m: Mat, addr: str) -> list[str]:
    """This lane's 16 bytes of the stored 16x16 tile, loaded into registers."""
    regs = [em.new("r") for _ in range(4)]
    em.put(I.ld_vec(m.space, "u32", I.vec(*regs), I.mem(addr)))
    return regs


def _staged(em, st: Stage, plan, desc, A: Mat, B: Mat, acc, chunks: int, offs) -> None:
    if chunks > 1:                          # K chunks of a wider tile (desc.k = 32, ...)
        a_step = scale_bytes(em, linear(em, offset_terms(A, 0, 16)), A.bits)
        b_step = scale_bytes(em, linear(em, offset_terms(B, 16, 0)), B.bits)
    sa = Mat(st.slot_a, ".shared", A.layout, 16, 16)
    sb = Mat(st.slot_b, ".shared", B.layout, 16, 16)
    a, b = _lane_bases(em, st, A, B, offs)
    for kk in range(chunks):
        if kk:
            a, b = add_addr(em, a, a_step), add_addr(em, b, b_step)
        src_a, src_b = _sources(em, st, A, B, a, b, offs)
        pa, pb = _piece(em, A, src_a), _piece(em, B, src_b)
        em.put(I.bar_warp_sync(-1),                 # the last wmma.load of the slots is done
               I.st_vec(".shared", "u32", I.mem(st.lane_a), I.vec(*pa)),
               I.st_vec(".shared", "u32", I.mem(st.lane_b), I.vec(*pb)),
               I.bar_warp_sync(-1))                 # every piece is in the slots
        af = load_frag(em, plan, "a", sa, st.slot_a, desc.a_type)
        bf = load_frag(em, plan, "b", sb, st.slot_b, desc.b_type)
        mma(em, plan, desc, acc[0][0], af, bf, acc[0][0], desc.accumulator_type,
            desc.result_type)


def _pipelined(em, st: Stage, plan, desc, A: Mat, B: Mat, chunks: int, offs) -> None:
    """Each K chunk: copy it into stage `buf`, multiply the step copied before it."""
    if chunks > 1:
        a_step = scale_bytes(em, linear(em, offset_terms(A, 0, 16)), A.bits)
        b_step = scale_bytes(em, linear(em, offset_terms(B, 16, 0)), B.bits)
    a, b = _lane_bases(em, st, A, B, offs)
    for kk in range(chunks):
        if kk:
            a, b = add_addr(em, a, a_step), add_addr(em, b, b_step)
        srcs = _sources(em, st, A, B, a, b, offs)
        em.put(I.bar_warp_sync(-1))        # the stage refilled now was read two steps ago
        for which, lane, src in zip("ab", (st.lane_a, st.lane_b), srcs):
            dst = em.new("r")
            em.put(I.binary("add", "u32", dst, lane, st.buf),
                   I.cp_async(CACHE[which], I.mem(dst), I.mem(src), 16))
        em.put(I.cp_async_commit_group())
        _multiply_pending(em, st, keep=1)
        em.put(I.mov("u32", st.pend, 1), I.binary("xor", "b32", st.buf, st.buf, STAGE))


def _multiply_pending(em, st: Stage, keep: int) -> None:
    """If a copied step awaits its MMA (the stage other than `buf`): wait until at most
    `keep` copy groups are in flight, make every lane's pieces visible, multiply."""
    idle = label(em, "wmma_pipe_idle")
    p = em.new("p")
    em.put(I.setp("eq", "u32", p, st.pend, 0), I.bra(idle, guard=p, uniform=True),
           I.cp_async_wait_group(keep), I.bar_warp_sync(-1))
    o, sa, sb = em.new("r"), em.new("r"), em.new("r")
    em.put(I.binary("xor", "b32", o, st.buf, STAGE), I.binary("add", "u32", sa, st.slot_a, o),
           I.binary("add", "u32", sb, st.slot_b, o))
    plan, desc, acc = st.plan, st.desc, st.acc
    af = load_frag(em, plan, "a", Mat(sa, ".shared", desc.stored_layout("a"), 16, 16), sa,
                   desc.a_type)
    bf = load_frag(em, plan, "b", Mat(sb, ".shared", desc.stored_layout("b"), 16, 16), sb,
                   desc.b_type)
    mma(em, plan, desc, acc[0][0], af, bf, acc[0][0], desc.accumulator_type,
        desc.result_type)
    em.put(I.label(idle))


def settle(em, st: Stage | None) -> None:
    """Before the accumulator is read (store, fused epilogue) or updated directly: the MMA
    of the last copied step, if one is pending. A no-op for the synchronous form."""
    if st is None or st.pend is None:
        return
    _multiply_pending(em, st, keep=0)
    em.put(I.mov("u32", st.pend, 0))


def run_update(em, st: Stage | None, plan, desc, A: Mat, B: Mat, acc, chunks: int) -> None:
    """acc += A*B: staged when `st` is set and the run-time test passes, else direct."""
    if st is None or not (_static_ok(A) and _static_ok(B)):
        settle(em, st)
        run_grid_on(em, plan, desc, A, B, acc, chunks)
        return
    direct, done = label(em, "wmma_direct"), label(em, "wmma_staged_end")
    offs = (_lane_offset(em, st, A), _lane_offset(em, st, B)) if HOIST_OFFSETS else None
    em.put(I.bra(direct, guard=_misaligned(em, st, A, B), uniform=True))
    if st.pend is not None:
        _pipelined(em, st, plan, desc, A, B, chunks, offs)
    else:
        _staged(em, st, plan, desc, A, B, acc, chunks, offs)
    em.put(I.bra(done, uniform=True), I.label(direct))
    settle(em, st)
    run_grid_on(em, plan, desc, A, B, acc, chunks)
    em.put(I.label(done))
