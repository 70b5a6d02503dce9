"""The 16-bit workgroup region's split regions on the warp MMA (docs/reference/gemm.md
"Split regions").

Where the sm_90a pipeline is not taken, wgmma_split splits an f16/bf16 workgroup region
into subgroup regions the warps take round-robin. The subgroup WMMA interior needs every
leading dimension a multiple of 16 bytes and 32-byte aligned origins (wmma.load's rule):
any other K (or lda/ldb) left every region to exact scalar replay, ~500x slower. On a
profile with mma.sync m16n8k16 f16/bf16 (sm_80+: `available`) and K-major operands (A
row-major, B column-major: the pipeline's layouts; other layouts keep WMMA/replay) the
regions run here instead, fp8_split_mma's warp MMA with 16-bit elements (_Warp16):

  S = sum(q < K) A[r,q]*B[q,c]   m16n8k16 MMAs into f32 accumulators that start at -0
  t = S + C[r,c]                 add.rn (wgmma_fp8.combine, no scale)
  D = round(epilogue(t))         the fused epilogue at (r, c), then D's one rounding

so only the order of the f32 sum differs from the replay's (the tensor core's is
unspecified). -0 is the additive identity of f32: K = 0 gives D = C bit for bit, as the
replay does. Per warp a 32 x 32 region: 64-byte K steps (32 elements, two k16 MMAs per
m16n8 tile), a lane reading 16 contiguous bytes of each of its 4 A rows and 4 B columns
at 16 tig (words 2c, 2c + 1 feed MMA c: the MMA's K index is permuted alike for A and
B), in the widest loads a uniform run-time test of A's and B's bases and leading
dimensions allows (16/8/4 bytes, else 2-byte loads packed with prmt), two register
buffers; the last K mod 32 elements one step of 2-byte loads predicated on q < K and
zero-filled; M/N edges clamp the lines and predicate C/D (fp8_split_mma's docstring).

Where WMMA applies today (`wmma_pred`: the workgroup region wholly in range, K >= 16,
every base and origin 32-byte aligned and every leading dimension a multiple of 16
bytes) the old subgroup lowering keeps the region (32 x 64 WMMA regions); f16/bf16
results have no WMMA form and always take the MMA here.
"""
from __future__ import annotations

from types import SimpleNamespace

from .. import ops as I
from . import fp8_split_mma
from .common import label, mat
from .matmul import TUPLE_BUDGET, _aligned, _origin
from .mma_sync import tuple_pressure
from .replay import Region, native_region_pred, replay

FORM = "the warp MMA (mma.sync m16n8k16)"


def available(em, desc) -> bool:
    """Whether split regions of `desc` compute on the warp MMA on this profile: f16/bf16
    A and B, f32 sum, f32/f16/bf16 D, K-major operands, and the MMA form's registers
    within the tuple budget (--gpu-tensor-tuple-budget, as for WMMA)."""
    budget = em.tensor_tuple_budget or TUPLE_BUDGET
    grid = (fp8_split_mma.SUB_M // 16, fp8_split_mma.SUB_N // 8)
    return (em.profile.has("mma.sync") and desc.a_type == desc.b_type
            and desc.a_type in ("f16", "bf16") and desc.accumulator_type == "f32"
            and desc.result_type in ("f32", "f16", "bf16")
            and not (desc.sparse or desc.scaled) and desc.math == "multiply_add"
            and desc.rounding == "default"
            and desc.stored_layout("a") == "row" and desc.stored_layout("b") == "col"
            and tuple_pressure(grid, 4, 2) <= budget)


class _Warp16(fp8_split_mma._Warp):
    """fp8_split_mma's warp region with 2-byte elements and m16n8k16 f16/bf16 MMAs: word
    2c + s of a lane's 16 bytes is its K-half-s register of MMA c (PTX ISA m16n8k16: a
    lane holds k = 2 tig, 2 tig + 1 (s = 0) and 2 tig + 8, 2 tig + 9 (s = 1); here
    elements 8 tig + 4c + 2s + 0..1), for A and B alike."""
    WIDTHS = (16, 8, 4, 2)
    ELEM_SHIFT = 1
    NARROW = "u16"
    ZERO = "0f80000000"                    # -0: S + C == C when no product is added

    def _form(self, desc):
        t = desc.a_type
        return SimpleNamespace(head=f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32")

    def _mma_step(self, buf) -> None:
        for c in (0, 1):
            self._mma_chunk(buf[:self.na], buf[self.na:], c)

    def _pack(self, dst: str, parts: list[str]) -> None:
        self.em.put(I.prmt(dst, parts[0], parts[1], "0x5410"))


def wmma_pred(em, desc, ops, row: str, col: str) -> str | None:
    """The predicate, uniform over the workgroup (every warp must pick the same tiling),
    under which the subgroup WMMA interior runs every region of the workgroup region at
    (row, col) (module docstring; a partial warp's regions replay inside it); None: never
    (a static leading dimension rules it out, or the result has no WMMA form)."""
    from .wgmma_split import rounded_result        # (wgmma_split imports this module)
    if rounded_result(desc) or not em.profile.has(f"wmma.{desc.a_type}"):
        return None
    A, B, C, D = (mat(em, desc, ops, w) for w in "abcd")
    origins = [_origin(em, A, row, 0), _origin(em, B, 0, col), _origin(em, C, row, col),
               _origin(em, D, row, col)]
    ok = _aligned(em, origins, 32)
    if ok is None:
        return None
    g = Region(desc, A, B, C, D, row, col, *(em.reg(ops[k]) for k in "mnk"))
    return native_region_pred(em, g, 16, ok, whole_warp=False)  # uniform over the workgroup


def split(em, desc, sub, ops, tid, ntid, end, fused, row: str, col: str, old) -> None:
    """The region at (row, col): `old()` (the subgroup lowering's round-robin, WMMA
    interiors) where wmma_pred holds, else 32 x 32 regions on the warp MMA taken
    round-robin down columns (a partial warp's: exact replay); then `end`."""
    from .wgmma_split import round_robin
    em.profile.need("warp.sync", "exact cooperative tensor replay", None)
    ok = wmma_pred(em, desc, ops, row, col)
    if ok is not None:
        mma = label(em, "s16_mma")
        em.put(I.bra(mma, guard=ok, negated=True, uniform=True))
        old()
        em.put(I.label(mma))
    small = fp8_split_mma.sub_desc(desc, sub)
    k_loop = fused.replay_k_loop() if fused is not None else None

    def body(r: str, c: str) -> None:
        g = Region(small, *(mat(em, small, ops, w) for w in "abcd"), r, c,
                   *(em.reg(ops[k]) for k in "mnk"))
        fp8_split_mma.region(em, g, None, fused,
                             lambda: replay(em, g, 0, False, k_loop=k_loop), _Warp16)
    round_robin(em, desc, small, tid, ntid, end, row, col, body, down_first=True)
