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
kernel with a declared block shape (the static `.shared` area is warps x 2 x 512 bytes, at
most 16 KiB: 512 work-items), the group is one f16/bf16 m16n16k16 physical tile per K
chunk, and A and B are global (or generic) memory. Each update then tests at run time,
uniformly for the warp (WMMA operands are warp-uniform), that both operand addresses are
16-byte aligned and both leading dimensions are multiples of 8 elements (16 bytes: the K
advance keeps this); otherwise that update takes the direct loads. Two `bar.warp.sync` per
chunk: before the slot is rewritten (the previous chunk's wmma.load is done) and before it
is read.
"""
from __future__ import annotations

from dataclasses import dataclass

from .common import Mat, add_addr, label, linear, offset_terms, scale_bytes
from .wmma import load_frag, mma, run_grid_on

SLOT = 512                         # one 16x16 16-bit tile: 16 rows of 32 bytes
MAX_AREA = 16384                   # leaves >= 32 KiB of the 48 KiB static .shared to the kernel
_SPACES = ("", ".global")          # operands worth staging (shared ones are already close)


@dataclass
class Stage:
    slot_a: str                    # u32 .shared address of this warp's A slot
    slot_b: str
    lane_a: str                    # this lane's 16-byte piece in the A slot
    lane_b: str
    row: str                       # lane >> 1 (u32): the stored row this lane copies
    half: str                      # (lane & 1) * 16 (u64): its byte offset in the row


def why_not(em, plan, desc) -> str | None:
    """Why a resident WMMA group keeps today's direct loads (None: it is staged)."""
    fn = em.fn
    if not getattr(em.module, "wmma_staging", True):
        return "staging off (--gpu-wmma-staging=off)"
    if em.profile.sm < 80:
        return f"{em.profile.target} is below sm_80"
    if not fn.is_kernel or not fn.block_shape:
        return "no declared kernel block shape for the shared staging slots"
    if _size(fn) > MAX_AREA:
        return f"a {_size(fn)}-byte staging area is over {MAX_AREA} bytes"
    if plan.family not in ("f16", "bf16") or tuple(plan.shape) != (16, 16, 16) or \
            tuple(plan.grid) != (1, 1):
        return "only one f16/bf16 m16n16k16 tile per chunk is staged"
    return None


def _size(fn) -> int:
    x, y, z = fn.block_shape
    return (x * y * z + 31) // 32 * 2 * SLOT           # two slots per warp


def _area(em) -> str:
    """This kernel's staging area (one per function, shared by its groups)."""
    sym = getattr(em, "wmma_stage_area", None)
    if sym is None:
        sym = em.wmma_stage_area = em.module.shared_array(em.fn, "wmma_stage",
                                                          _size(em.fn), 128)
    return sym


def prepare(em) -> Stage:
    """This warp's slots and this lane's piece, computed once where C is loaded."""
    sym = _area(em)
    x, y, z = em.fn.block_shape
    lin = em.new("r")                        # linear thread id; its warp is lin / 32
    em.emit(f"mov.u32 {lin}, %tid.x")
    for sreg, extent, scale in (("%tid.y", y, x), ("%tid.z", z, x * y)):
        if extent > 1:
            t = em.new("r")
            em.emit(f"mov.u32 {t}, {sreg}")
            em.emit(f"mad.lo.u32 {lin}, {t}, {scale}, {lin}")
    warp, base, slot_a, slot_b = (em.new("r") for _ in range(4))
    lane, piece, lane_a, lane_b, row, h = (em.new("r") for _ in range(6))
    half = em.new("rd")
    em.emit(f"shr.u32 {warp}, {lin}, 5")
    em.emit(f"mov.u32 {base}, {sym}")
    em.emit(f"mad.lo.u32 {slot_a}, {warp}, {2 * SLOT}, {base}")
    em.emit(f"add.u32 {slot_b}, {slot_a}, {SLOT}")
    em.emit(f"and.b32 {lane}, {lin}, 31")
    em.emit(f"shl.b32 {piece}, {lane}, 4")
    em.emit(f"add.u32 {lane_a}, {slot_a}, {piece}")
    em.emit(f"add.u32 {lane_b}, {slot_b}, {piece}")
    em.emit(f"shr.u32 {row}, {lane}, 1")
    em.emit(f"and.b32 {h}, {lane}, 1")
    em.emit(f"mul.wide.u32 {half}, {h}, 16")
    return Stage(slot_a, slot_b, lane_a, lane_b, row, half)


def _static_ok(m: Mat) -> bool:
    return m.space in _SPACES and m.bits == 16 and (not isinstance(m.ld, int) or
                                                    m.ld % 8 == 0)


def _misaligned(em, A: Mat, B: Mat) -> str:
    """A uniform predicate: true when an operand base is not 16-byte aligned or a leading
    dimension is not a multiple of 8 elements."""
    both, low = em.new("rd"), em.new("r")
    em.emit(f"or.b64 {both}, {A.base}, {B.base}")
    em.emit(f"cvt.u32.u64 {low}, {both}")
    em.emit(f"and.b32 {low}, {low}, 15")
    lds = [m.ld for m in (A, B) if not isinstance(m.ld, int)]
    if lds:
        ld = lds[0]
        if len(lds) == 2:
            ld = em.new("r")
            em.emit(f"or.b32 {ld}, {lds[0]}, {lds[1]}")
        bad = em.new("r")
        em.emit(f"and.b32 {bad}, {ld}, 7")
        em.emit(f"or.b32 {low}, {low}, {bad}")
    p = em.new("p")
    em.emit(f"setp.ne.u32 {p}, {low}, 0")
    return p


def _piece(em, st: Stage, m: Mat, base: str) -> list[str]:
    """This lane's 16 bytes of the stored 16x16 tile at `base` (row st.row, half st.half)."""
    off = em.new("rd")
    if isinstance(m.ld, int):
        em.emit(f"mul.wide.u32 {off}, {st.row}, {m.ld * 2}")
    else:
        em.emit(f"mul.wide.u32 {off}, {st.row}, {m.ld}")
        em.emit(f"shl.b64 {off}, {off}, 1")
    addr = em.new("rd")
    em.emit(f"add.s64 {addr}, {base}, {off}")
    regs = [em.new("r") for _ in range(4)]
    em.emit(f"ld{m.space}.v4.u32 {{{', '.join(regs)}}}, [{addr}]")
    return regs


def _lane_addr(em, st: Stage, base: str) -> str:
    r = em.new("rd")
    em.emit(f"add.s64 {r}, {base}, {st.half}")
    return r


def _staged(em, st: Stage, plan, desc, A: Mat, B: Mat, acc, chunks: int) -> None:
    if chunks > 1:                          # K chunks of a wider tile (desc.k = 32, ...)
        a_step = scale_bytes(em, linear(em, offset_terms(A, 0, 16)), A.bits)
        b_step = scale_bytes(em, linear(em, offset_terms(B, 16, 0)), B.bits)
    sa = Mat(st.slot_a, ".shared", A.layout, 16, 16)
    sb = Mat(st.slot_b, ".shared", B.layout, 16, 16)
    a, b = _lane_addr(em, st, A.base), _lane_addr(em, st, B.base)
    for kk in range(chunks):
        if kk:
            a, b = add_addr(em, a, a_step), add_addr(em, b, b_step)
        pa, pb = _piece(em, st, A, a), _piece(em, st, B, b)
        em.emit("bar.warp.sync -1")                 # the last wmma.load of the slots is done
        em.emit(f"st.shared.v4.u32 [{st.lane_a}], {{{', '.join(pa)}}}")
        em.emit(f"st.shared.v4.u32 [{st.lane_b}], {{{', '.join(pb)}}}")
        em.emit("bar.warp.sync -1")                 # every piece is in the slots
        af = load_frag(em, plan, "a", sa, st.slot_a, desc.a_type)
        bf = load_frag(em, plan, "b", sb, st.slot_b, desc.b_type)
        mma(em, plan, desc, acc[0][0], af, bf, acc[0][0], desc.accumulator_type,
            desc.result_type)


def run_update(em, st: Stage | None, plan, desc, A: Mat, B: Mat, acc, chunks: int) -> None:
    """acc += A*B: staged when `st` is set and the run-time test passes, else direct."""
    if st is None or not (_static_ok(A) and _static_ok(B)):
        run_grid_on(em, plan, desc, A, B, acc, chunks)
        return
    direct, done = label(em, "wmma_direct"), label(em, "wmma_staged_end")
    em.emit(f"@{_misaligned(em, A, B)} bra.uni {direct}")
    _staged(em, st, plan, desc, A, B, acc, chunks)
    em.emit(f"bra.uni {done}")
    em.raw(f"{direct}:")
    run_grid_on(em, plan, desc, A, B, acc, chunks)
    em.raw(f"{done}:")
