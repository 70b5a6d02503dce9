"""The whole sm_90a workgroup GEMM pipeline, as compiled, on the CPU interpreter with the
copy engine, mbarriers and wgmma emulated from the PTX ISA (wgmma_sim.PipelineSim): the
producer's tensor maps and copies, the ring's barriers and parities, the consumers'
descriptors and K loops, the ping-pong turns and ring skips, the tile loop and the
epilogue, on small-integer data (every sum exact) against the oracle bit for bit, with
NaN-poisoned D whose padding must stay untouched; with a seed, copies land late in a
random order and a copy onto a stage that an unretired wgmma group reads is an error. The
cooperative schedule (measured correct on the H200) checks the emulator itself; a
ping-pong kernel whose consumers do not skip the other's half tile must deadlock there,
and one that releases a stage before its group retires must be caught."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bench.fp8_kernels import exact_values, fp8_source
from bench.fp8_kernels import native_launch as fp8_launch
from bench.wgmma_kernels import gemm_source, native_launch
from tests.support import tensor_oracle as O
from toolchain.compiler.targets.ptx.tensor import wgmma_pingpong
from toolchain.compiler.targets.ptx.tensor import wgmma_streamk as streamk

from .kernels import compile_ptx
from .ptx_sim import SimError
from .wgmma_sim import PipelineSim

BN = 64                                      # small tiles: 128x64 (ping-pong halves 128x32)
GUARD, GUARD_WORD = 64, 0xDEADBEEF           # words after a stream-K workspace


def _run(M, N, K, grid, schedule, persistent=True, fmt="f16", out="f32", seed=None,
         pitch=None, sim=PipelineSim, cluster=None, ldd=None, shared=None, bn=BN,
         workspace=False, bm=128):
    """(sim, D as computed, D wanted, D's padding untouched); `pitch`: A's and B's row
    pitch in elements (default: K rounded up to 16 bytes, plus 16); `sim`: the simulator
    class (cluster_sim.ClusterSim for clusters); `cluster`: the call's `cluster:` option;
    `ldd`: D's row pitch (default: even; a multiple of 16 bytes takes the copy engine's
    store path, where the tile's width holds whole boxes); `shared`: the launch's dynamic
    shared bytes (default: wgmma.shared_bytes); `bn`, `bm`: the tile's width and height; `workspace`: a
    zeroed stream-K workspace of wgmma_streamk.workspace_bytes, then GUARD words of
    GUARD_WORD (the kernel's last parameter, read back as sim.mem.read("ws"))."""
    rng = np.random.default_rng(M * 3 + N * 5 + K)
    lda = ldb = pitch or -(-K // 8) * 8 + 8  # 16-byte row pitches (the pipeline's rule)
    ldc = N + 2 + N % 2                      # even pitches (the pipeline's rule)
    ldd = ldd or N + 4 + N % 2
    a = rng.integers(-3, 4, (M, K)).astype(np.float32)
    b = rng.integers(-3, 4, (N, K)).astype(np.float32)
    c = rng.integers(-8, 8, (M, N)).astype(np.float32)
    A = np.zeros((M, lda), np.uint16)
    B = np.zeros((N, ldb), np.uint16)
    enc = (lambda x: x.astype(np.float16).view(np.uint16)) if fmt == "f16" else \
        (lambda x: O.to_bf16_bits(x))
    A[:, :K], B[:, :K] = enc(a), enc(b)
    C = np.zeros((M, ldc), np.float32)
    C[:, :N] = c
    D = np.full(M * ldd + 8, np.nan, np.float32) if out == "f32" else \
        np.full(M * ldd + 8, 0x7E00, np.uint16)           # NaN either way
    src = gemm_source(fmt, bm=bm, bn=bn, out=out, persistent=persistent, schedule=schedule,
                      cluster=cluster or 1, workspace=workspace)
    threads, need = native_launch(fmt, bm, bn, out, schedule)
    args = [("buf", "a", A.ravel()), ("buf", "b", B.ravel()), ("buf", "c", C.ravel()),
            ("buf", "d", D)] + [("u32", v) for v in (M, N, K, lda, ldb, ldc, ldd)]
    if workspace:
        args.append(_workspace_arg(bn, grid))
    want = c + a.astype(np.float64) @ b.astype(np.float64).T
    if out == "f16":                         # every sum is exact: one rounding to D
        want = want.astype(np.float16).view(np.uint16)
    elif out == "bf16":
        want = O.to_bf16_bits(want.astype(np.float32))
    return _launch(src, "gemm", shared or need, grid, threads, args, M, N, ldd, want, seed,
                   sim)


def _workspace_arg(bn: int, grid: int):
    """The kernel's `ws` argument: a zeroed stream-K workspace for `grid` workgroups of
    128 x bn tiles (wgmma_streamk.workspace_bytes), then GUARD words of GUARD_WORD."""
    words = streamk.workspace_bytes(SimpleNamespace(m=128, n=bn), grid) // 4
    return ("buf", "ws", np.concatenate([np.zeros(words, np.uint32),
                                         np.full(GUARD, GUARD_WORD, np.uint32)]))


def workspace_slots(sim, grid: int):
    """The partial-sum slots of a launch's workspace (uint32 words), after asserting that
    the launch left every counter at zero and wrote nothing past the workspace."""
    ws = sim.mem.read("ws")
    counters = streamk.counter_bytes(grid) // 4
    assert (ws[-GUARD:] == GUARD_WORD).all(), "written past the workspace"
    assert not ws[:counters].any(), "a counter was left non-zero"
    return ws[counters:-GUARD]


def _launch(src, kernel, shared, grid, threads, args, M, N, ldd, want, seed,
            sim_class=PipelineSim):
    sim = sim_class(compile_ptx(src, "sm_90a"), kernel, shared, undefined=0, seed=seed)
    got = sim.run((grid, 1), threads, args).read("d")
    inside = np.zeros(got.size, bool)
    r, col = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    inside[r * ldd + col] = True
    poisoned = np.isnan(got[~inside]) if got.dtype == np.float32 else got[~inside] == 0x7E00
    return sim, got[:M * ldd].reshape(M, ldd)[:, :N], want, poisoned.all()


@pytest.mark.parametrize("schedule,M,N,K,grid,persistent,seed", [
    ("cooperative", 150, 70, 130, 3, True, None),  # the emulator on the measured form
    ("cooperative", 150, 70, 450, 3, True, 1),     # ... with copies landing late
    ("pingpong", 150, 70, 130, 3, True, None),     # 4 tiles on 3 workgroups: 2, 1, 1
    ("pingpong", 150, 70, 450, 3, True, 1),        # nk = 8 > 6 stages: skips wrap the ring
    ("pingpong", 150, 70, 450, 2, True, 2),
    ("pingpong", 150, 70, 0, 3, True, None),       # K = 0: D = C, turns still taken
    ("pingpong", 150, 70, 130, 4, False, 3),       # one region per workgroup
    ("pingpong", 150, 69, 450, 3, True, 4),        # odd N: a last pair with one column
    ("cooperative", 150, 69, 130, 3, True, 4),
])
def test_pipeline_exact(schedule, M, N, K, grid, persistent, seed):
    sim, got, want, untouched = _run(M, N, K, grid, schedule, persistent, seed=seed)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    nk, tiles = -(-K // 64), 4
    per_chunk = 4 * 2 * (2 if schedule == "pingpong" else 1)   # k16 steps x 64-row blocks
    assert sim.wgmmas == tiles * nk * per_chunk                 # (x halves: ping-pong)


# (schedule, M, N, K, grid, D's format, ldd, seed): D's rows 16-byte aligned and N a
# multiple of 16 bytes, so D leaves through the copy engine (wgmma.store_epilogue)
STORE_CASES = [
    ("cooperative", 150, 72, 130, 3, "f32", 76, None),   # row and column tails, 4 tiles on 3
    ("cooperative", 150, 64, 450, 2, "f32", 64, 1),      # ring wraps, copies landing late
    ("cooperative", 150, 72, 130, 3, "f16", 80, 2),      # 16-bit D: one box a 64-row block
    ("cooperative", 150, 128, 130, 1, "bf16", 136, 3),   # 2 tiles on 1: the rotation goes on
    ("pingpong", 150, 72, 130, 3, "f32", 80, 4),         # block 1 goes on block 0's boxes
    ("pingpong", 150, 64, 450, 2, "f32", 64, 5),
    ("pingpong", 150, 72, 0, 3, "f32", 72, None),        # K = 0: D = C
    ("auto", 150, 72, 130, 3, "f32", 76, 6),
]
# (schedule, M, N, K, grid, D's format, ldd, seed) on 128-column tiles: two 16-bit boxes
# or four f32 boxes a block, so C's loads for the next box go before a box's sums
# (wgmma.STORE_C_AHEAD) and wrap the two buffers within a tile
WIDE_STORE_CASES = [
    ("cooperative", 140, 200, 130, 2, "f16", 208, 7),    # the second tile column's tail
    ("cooperative", 140, 136, 70, 1, "f32", 136, 8),     # 4 tiles on 1 workgroup
    ("pingpong", 140, 200, 130, 2, "bf16", 200, 9),
]


@pytest.fixture
def tma_store(monkeypatch):
    """wgmma.TMA_STORE on (D through the copy engine, the default), whatever the
    module's default becomes."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "TMA_STORE", True)


@pytest.fixture
def clipped_store(monkeypatch, tma_store):
    """wgmma.CLIPPED_STORE on as well: widths of no whole number of boxes clip the last."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "CLIPPED_STORE", True)


@pytest.mark.parametrize("schedule,M,N,K,grid,out,ldd,seed", STORE_CASES)
def test_d_through_the_copy_engine_is_exact(tma_store, schedule, M, N, K, grid, out, ldd,
                                            seed):
    """The store epilogue: each warp's boxes written through the swizzle, stored by its
    lane 0, clipped to M and N by the copy engine, a box rewritten only after the store
    that read it has read it (the emulator checks it), every store waited for before the
    workgroup ends: exact against the oracle, D's padding untouched."""
    sim, got, want, untouched = _run(M, N, K, grid, schedule, seed=seed, out=out, ldd=ldd,
                                     pitch=192 if schedule == "auto" else None)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    assert sim.stores > 0


@pytest.mark.parametrize("schedule,M,N,K,grid,out,ldd,seed", WIDE_STORE_CASES)
@pytest.mark.parametrize("ahead", [1, 0])
def test_c_loaded_a_box_ahead_is_exact(tma_store, monkeypatch, ahead, schedule, M, N, K,
                                       grid, out, ldd, seed):
    """Several boxes a block, with the next box's C loaded before this box's sums and
    without: exact, D's padding untouched, both buffers of every warp reused."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "STORE_C_AHEAD", ahead)
    sim, got, want, untouched = _run(M, N, K, grid, schedule, seed=seed, out=out, ldd=ldd,
                                     bn=128)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    assert sim.stores > 0


@pytest.mark.parametrize("out,N,ldd", [("f32", 70, 76), ("f32", 69, 72), ("f16", 76, 80),
                                       ("f32", 72, 74)])
def test_d_the_copy_engine_cannot_store_exactly_goes_from_the_registers(tma_store, out, N,
                                                                         ldd):
    """N not a multiple of 16 bytes (the copy engine would write up to the end of the
    16-byte unit, past N: the emulator does what the H100 did) or a pitch that is not:
    the register stores, exact, D's padding untouched."""
    sim, got, want, untouched = _run(150, N, 130, 3, "cooperative", out=out, ldd=ldd)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    assert sim.stores == 0


def test_a_box_rewritten_too_early_is_caught(tma_store, monkeypatch):
    """A warp that does not wait until its store has read the box (no wait_group.read)
    rewrites it under the copy engine: the emulator reports it."""
    from toolchain.compiler.targets.ptx import ops
    wait = ops.cp_async_bulk_wait_group
    monkeypatch.setattr(ops, "cp_async_bulk_wait_group",
                        lambda n, read=False: wait(n + 2 if read else n, read))
    with pytest.raises(SimError, match="before the copy engine had read it"):
        _run(150, 64, 130, 1, "cooperative", ldd=64)


@pytest.mark.parametrize("c_first", [True, False])
def test_pingpong_c_first_and_c_last_are_exact(monkeypatch, c_first):
    """Both places of C in the ping-pong consumer (added in the epilogue, the default; or,
    with wgmma.PINGPONG_C_FIRST, loaded into the accumulators before the turn), with late
    copies, ring wraps and an odd N, are exact against the oracle."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "PINGPONG_C_FIRST", c_first)
    sim, got, want, untouched = _run(150, 67, 450, 2, "pingpong", seed=6)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"


@pytest.mark.parametrize("pitch,branch,seed", [
    (192, "pingpong", 1),                    # 384-byte rows (buffers 256-byte aligned)
    (200, "cooperative", 1),                 # 400-byte rows: misaligned, the other one
    (136, "cooperative", None),
])
def test_auto_takes_the_documented_branch(pitch, branch, seed):
    """`schedule: auto`: both pipelines in one kernel; the run-time rule (128-byte aligned
    A/B rows: ping-pong) picks one, seen in the wgmma count (a ping-pong chunk is two
    half tiles' wgmma), and either is exact against the oracle."""
    M, N, K = 150, 70, 130
    sim, got, want, untouched = _run(M, N, K, 3, "auto", seed=seed, pitch=pitch)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    per_chunk = 4 * 2 * (2 if branch == "pingpong" else 1)
    assert sim.wgmmas == 4 * -(-K // 64) * per_chunk


@pytest.mark.parametrize("schedule,pitch", [("pingpong", None), ("auto", 512)])
def test_a_six_stage_pingpong_ring_is_exact(monkeypatch, schedule, pitch):
    """bench/gemm.py --pingpong-stages 6 (the ring depth the H200 compares with the
    default 7): nk = 8 chunks a half tile wrap the 6-stage ring, late copies included."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "PINGPONG_MAX_STAGES", 6)
    sim, got, want, untouched = _run(150, 70, 450, 3, schedule, seed=5, pitch=pitch)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    assert sim.wgmmas == 4 * 8 * 16                 # 4 tiles, 8 chunks, 2 halves x 8
    text = compile_ptx(gemm_source("f16", bn=BN, persistent=True, schedule="pingpong"),
                       "sm_90a")
    assert text.count("mbarrier.inval") == 2 * 6 + 2     # 6 full, 6 empty, 2 turns


def run_fp8(M, N, K, grid, schedule, seed, data_seed, sim=PipelineSim, cluster=1,
            workspace=False, bn=BN, ldd=None):
    """FP8 (E4M3, k32, 128-byte stages) with per-tensor scales 0.5 and 4, bf16 D, persistent
    on `grid` workgroups of 128 x bn tiles (`workspace`: a zeroed stream-K workspace, then
    GUARD words; `ldd`: D's pitch, default N + 4): (sim, D as computed, D wanted)."""
    rng = np.random.default_rng(data_seed)
    lda = ldb = -(-K // 16) * 16 + 16
    ldc, ldd = N + 2, ldd or N + 4
    ab, av = exact_values(rng, (M, K), "e4m3")
    bb, bv = exact_values(rng, (N, K), "e4m3")
    A = np.zeros((M, lda), np.uint8)
    A[:, :K] = ab
    B = np.zeros((N, ldb), np.uint8)
    B[:, :K] = bb
    c = rng.integers(-8, 8, (M, N)).astype(np.float32)
    C = np.zeros((M, ldc), np.float32)
    C[:, :N] = c
    D = np.full(M * ldd + 8, 0x7E00, np.uint16)
    threads, shared = fp8_launch(128, bn, schedule=schedule or "cooperative")
    args = [("buf", "a", A.ravel()), ("buf", "b", B.ravel()), ("buf", "c", C.ravel()),
            ("buf", "d", D)] + [("u32", v) for v in (M, N, K, lda, ldb, ldc, ldd)] + \
        [("buf", "sa", np.array([0.5], np.float32)), ("buf", "sb", np.array([4.0], np.float32))]
    if workspace:
        args.append(_workspace_arg(bn, grid))
    src = fp8_source("e4m3", "e4m3", "bf16", persistent=True, bn=bn, schedule=schedule,
                     cluster=cluster, workspace=workspace)
    run = sim(compile_ptx(src, "sm_90a"), "gemm8", shared, undefined=0, seed=seed)
    got = run.run((grid, 1), threads, args).read("d")
    want = O.to_bf16_bits((av @ bv.T * 2.0 + c).astype(np.float32))
    return run, got[:M * ldd].reshape(M, ldd)[:, :N], want


# (width, schedule, M, N, K, grid, D's format, cluster, A's and B's pitch, seed): 128 x
# 240 regions (wgmma n240, ping-pong halves n120; D from the registers: N = 250 makes
# D's rows no multiple of 16 bytes) and 128 x 232 ones (n232: no ping-pong halves, so
# auto is the cooperative pipeline alone even on aligned rows; paired, each workgroup
# multicasts a 120-row box, at rows 0 and 112, overlapping by 8), tails in M and N, the
# pair in clusters of 2
WIDTH_CASES = [
    (240, "cooperative", 150, 250, 130, 3, "f32", None, None, 1),
    (240, "pingpong", 150, 250, 130, 3, "f16", None, None, 2),
    (240, "auto", 300, 250, 130, 4, "bf16", 2, 200, 3),
    (240, "pingpong", 300, 250, 130, 4, "f16", 2, None, 8),  # B quarters of 64 and 56
    (232, "cooperative", 150, 250, 130, 3, "f32", None, None, 4),
    (232, "auto", 300, 250, 130, 4, "bf16", 2, 200, 5),
    (232, "auto", 300, 490, 200, 4, "f16", 2, 256, 6),     # aligned rows
    (232, "cooperative", 260, 470, 70, 6, "f32", 2, None, 7),
]


@pytest.mark.parametrize("bn,schedule,M,N,K,grid,out,cluster,pitch,seed", WIDTH_CASES)
def test_region_widths_240_and_232_exact(bn, schedule, M, N, K, grid, out, cluster, pitch,
                                         seed):
    """`shape: m128n240k64` and `m128n232k64` (widths that fit N = 3000 in 13 tiles) on the
    pipeline: exact, D's padding untouched, each K chunk computed once per tile (in one
    pipeline: auto at 232 has no ping-pong branch)."""
    _exact_once_per_chunk(bn, schedule, M, N, K, grid, out, cluster, pitch, seed, bk=64)


def _exact_once_per_chunk(bn, schedule, M, N, K, grid, out, cluster, pitch, seed, bk):
    """The pipeline at width bn is exact, leaves D's padding untouched, and issues each
    bk-element K chunk's k16 steps once per tile and 64-row block (ping-pong: per half)."""
    from .cluster_sim import ClusterSim
    sim, got, want, untouched = _run(M, N, K, grid, schedule, out=out, bn=bn, seed=seed,
                                     cluster=cluster, pitch=pitch,
                                     sim=ClusterSim if cluster else PipelineSim)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    rows = -(-M // 128)
    if cluster:                              # whole pair rows: rank 1 past M computes too
        rows += rows % 2
    tiles = rows * -(-N // bn)
    halves = 2 if schedule == "pingpong" else 1
    assert sim.wgmmas == tiles * -(-K // bk) * (bk // 16) * 2 * halves


# (schedule, M, N, K, grid, D's format, cluster, seed): 128 x 240 regions whose D goes
# through the copy engine (N and D's pitch multiples of 16 bytes): the tiles wholly inside
# N store their last box through the rank-3 map that clips it at 240 columns (ping-pong:
# at the 120 of a half), the last column of tiles (16 columns) through the rank-2 map that
# clips at N; D's columns between tiles are written once, by their own tile
# (and 128 x 232 regions: f32 D's boxes of 32 columns clip at 8, 16-bit D's of 64 at 40)
CLIPPED_CASES = [
    (240, "cooperative", 150, 496, 130, 3, "f32", None, 1),
    (240, "pingpong", 150, 496, 130, 3, "f16", None, 2),
    (240, "pingpong", 140, 488, 70, 2, "f32", None, 3),   # a half wholly past N
    (240, "auto", 300, 496, 130, 4, "bf16", 2, 4),
    (232, "cooperative", 150, 480, 130, 3, "f32", None, 5),
    (232, "auto", 300, 480, 130, 4, "bf16", 2, 6),
]


@pytest.mark.parametrize("bn,schedule,M,N,K,grid,out,cluster,seed", CLIPPED_CASES)
def test_width_240_d_through_the_copy_engine_is_exact(clipped_store, bn, schedule, M, N, K,
                                                      grid, out, cluster, seed):
    from .cluster_sim import ClusterSim
    ldd = N + 8
    sim, got, want, untouched = _run(M, N, K, grid, schedule, out=out, bn=bn, seed=seed,
                                     cluster=cluster, pitch=200 if cluster else None,
                                     ldd=ldd, sim=ClusterSim if cluster else PipelineSim)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    # one store per box of 16 rows that starts below M and N, none from the registers
    width = bn // 2 if schedule == "pingpong" else bn   # auto: misaligned rows, cooperative
    cols = 128 // (4 if out == "f32" else 2)
    starts = [c + b for c in range(0, N, width) for b in range(0, width, cols) if c + b < N]
    whole = [x for x in starts if x - x % width + width <= N]
    assert sim.stores == len(range(0, M, 16)) * len(starts)
    assert sim.stores_by_rank == {3: len(range(0, M, 16)) * len(whole),
                                  2: len(range(0, M, 16)) * (len(starts) - len(whole))}


def test_pipeline_fp8_width_240_d_through_the_copy_engine_exact(clipped_store):
    """FP8 at 128 x 240 with a bf16 D the copy engine stores (clipped last boxes)."""
    sim, got, want = run_fp8(150, 496, 300, 3, "auto", 6, 8, bn=240, ldd=504)
    np.testing.assert_array_equal(got, want)
    assert sim.stores > 0


def test_pipeline_fp8_width_240_exact():
    """FP8 with 128 x 240 regions (wgmma m64n240k32), auto on misaligned rows (cooperative)."""
    sim, got, want = run_fp8(150, 250, 300, 3, "auto", 6, 8, bn=240)
    np.testing.assert_array_equal(got, want)
    assert sim.wgmmas == 4 * 3 * 4 * 2


def test_pipeline_fp8_pingpong_exact():
    """FP8 (E4M3, k32, 128-byte stages) with per-tensor scales, ping-pong, bf16 D."""
    sim, got, want = run_fp8(150, 70, 300, 3, "pingpong", 4, 7)
    np.testing.assert_array_equal(got, want)
    assert sim.wgmmas == 4 * 3 * 4 * 2 * 2


def test_pipeline_fp8_stream_k_exact():
    """FP8 with a workspace: 4 tiles on 8 workgroups, each split in 2 (3 K chunks of 128),
    the parts summed in order before the scales and the bf16 rounding: exact, every
    counter back at zero, partial sums in the workspace, nothing written past it."""
    sim, got, want = run_fp8(150, 70, 300, 8, "cooperative", 5, 9, workspace=True)
    np.testing.assert_array_equal(got, want)
    assert sim.wgmmas == 4 * 3 * 4 * 2
    assert workspace_slots(sim, 8).any()


def test_a_broken_ping_pong_deadlocks(monkeypatch):
    """Consumers that do not skip the other's half tile wait for chunks that never come:
    the emulator reports the deadlock rather than hanging."""
    monkeypatch.setattr(wgmma_pingpong, "_skip", lambda *a: None)
    with pytest.raises(SimError, match="deadlock"):
        _run(150, 70, 130, 1, "pingpong")


def test_an_early_release_is_caught(monkeypatch):
    """Consumers that keep two groups in flight (wait_group 2) but still release the
    stage before the last: a late copy lands on a stage a group still reads."""
    from toolchain.compiler.targets.ptx import ops
    wait = ops.wgmma_wait_group
    monkeypatch.setattr(ops, "wgmma_wait_group", lambda n: wait(2 if n == 1 else n))
    with pytest.raises(SimError, match="still reads"):
        _run(150, 70, 450, 3, "pingpong", seed=1)


def test_the_ring_alone_stores_d_from_the_registers(tma_store):
    """A launch that gives ring_bytes (the size before D's boxes, what older host code
    passes) still runs the pipeline, its barriers right after the ring, with D stored
    from the registers: exact, no store through the copy engine."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    from toolchain.compiler.ir.tensor import TensorDesc
    desc = TensorDesc(128, BN, 64, "f16", "f16", "f32", "f32", b_layout="col",
                      scope="workgroup", schedule="cooperative")
    assert wgmma.ring_bytes(desc) < wgmma.shared_bytes(desc)
    sim, got, want, untouched = _run(150, 72, 130, 3, "cooperative", ldd=76, seed=7,
                                     shared=wgmma.ring_bytes(desc))
    np.testing.assert_array_equal(got, want)
    assert untouched and sim.stores == 0 and sim.wgmmas == 4 * 3 * 8


# (schedule, M, N, K, grid, D's format, ldd, A/B pitch (None: the default), reverse, seed):
# T tiles of 128x64 on W workgroups, the last round's r = T mod W tiles cut into s parts
# (wgmma_streamk.plan)
STREAMK_CASES = [
    ("cooperative", 150, 70, 450, 3, "f32", 72, None, False, None),  # T 4, r 1: s 3, nk 8
    ("cooperative", 150, 70, 450, 3, "f32", 72, None, True, 1),      # part 0 counts last
    ("cooperative", 150, 64, 130, 4, "f32", 64, None, True, None),   # T 2 < W: s 2
    ("cooperative", 280, 128, 450, 4, "f16", 136, None, False, 2),   # T 6, r 2: s 2, TMA D
    ("auto", 280, 128, 450, 4, "bf16", 136, 456, True, 3),           # misaligned: coop
    ("auto", 150, 64, 130, 4, "f32", 64, 192, False, 4),    # aligned, T < W: coop splits
    ("cooperative", 100, 60, 580, 8, "f32", 64, None, True, 5),      # T 1 on 8: s 8, nk 10
    ("cooperative", 150, 70, 64, 3, "f32", 72, None, False, None),   # nk 1: no split
    ("cooperative", 150, 70, 0, 3, "f32", 72, None, False, None),    # K = 0: D = C
]


@pytest.mark.parametrize("schedule,M,N,K,grid,out,ldd,pitch,reverse,seed", STREAMK_CASES)
def test_stream_k_parts_meet_in_the_workspace(tma_store, monkeypatch, schedule, M, N, K,
                                              grid, out, ldd, pitch, reverse, seed):
    """`workspace:`: the last round's tiles split along K, every part's warps storing
    their partial sums, the last to count summing them in part order and storing D
    (whichever part that is: the workgroups also run last to first): exact against the
    oracle, D's padding and the words after the workspace untouched, every counter back
    at zero for the next launch, and each K chunk of each tile computed once by the
    cooperative pipeline (auto takes it on misaligned rows, and on aligned ones when
    every tile is in the last round and splits)."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "STREAM_K", 2)        # the last round after whole ones too
    monkeypatch.setattr(PipelineSim, "reverse_x", reverse)
    sim, got, want, untouched = _run(M, N, K, grid, schedule, seed=seed, out=out, ldd=ldd,
                                     workspace=True, pitch=pitch)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    workspace_slots(sim, grid)
    assert sim.wgmmas == -(-M // 128) * -(-N // BN) * -(-K // 64) * 4 * 2


def test_auto_keeps_pingpong_when_the_split_does_not_pay():
    """auto with a workspace on aligned rows and more tiles than one round (T 4 on W 3):
    ping-pong, whole tiles (twice the cooperative wgmma count per chunk), nothing in the
    workspace."""
    sim, got, want, _ = _run(150, 70, 450, 3, "auto", workspace=True, pitch=512)
    np.testing.assert_array_equal(got, want)
    assert sim.wgmmas == 2 * 2 * 8 * 4 * 2 * 2
    assert not sim.mem.read("ws")[:-GUARD].any()


@pytest.mark.parametrize("mode,M,grid,split", [
    (2, 150, 3, True),                         # T 4 on W 3: the last round splits
    (1, 150, 3, False),                        # ... not by default (whole rounds first)
    (1, 150, 8, True),                         # T 4 on W 8: one round, split
    (0, 150, 8, False),                        # STREAM_K off
])
def test_stream_k_splits_what_its_mode_says(monkeypatch, mode, M, grid, split):
    """Whether partial sums reach the workspace (the cases above would pass unsplit too):
    wgmma.STREAM_K 1 (the default) splits a launch of fewer tiles than workgroups, 2
    also the last round after whole ones, 0 nothing."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "STREAM_K", mode)
    sim, got, want, _ = _run(M, 70, 450, grid, "cooperative", workspace=True)
    np.testing.assert_array_equal(got, want)
    slots = workspace_slots(sim, grid).view(np.float32)
    assert (np.count_nonzero(slots) > 0) == split


# (width, schedule, M, N, K, grid, D's format, cluster, A's and B's pitch, seed) with
# 64-byte stages (wgmma.STAGE_ROW = 64: 64-byte swizzled maps and descriptors, two k16
# steps a stage, twice the stages): the measured cooperative form, ping-pong, a paired
# 232 kernel (B halves of 120 and 112 rows at 512-byte swizzle repeats), late copies
STAGE_ROW_CASES = [
    (64, "cooperative", 150, 70, 450, 3, "f32", None, None, 1),
    (64, "pingpong", 150, 70, 450, 2, "f16", None, None, 2),
    (232, "auto", 300, 490, 200, 4, "f32", 2, 200, 3),
    (232, "cooperative", 260, 470, 130, 6, "bf16", 2, None, 4),
]


@pytest.mark.parametrize("bn,schedule,M,N,K,grid,out,cluster,pitch,seed", STAGE_ROW_CASES)
def test_sixty_four_byte_stages_are_exact(monkeypatch, bn, schedule, M, N, K, grid, out,
                                          cluster, pitch, seed):
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "STAGE_ROW", 64)
    _exact_once_per_chunk(bn, schedule, M, N, K, grid, out, cluster, pitch, seed, bk=32)


def test_sixty_four_byte_fp8_stages_are_exact(monkeypatch):
    """FP8 (k32) with 64-byte stages: two k32 steps a stage."""
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "STAGE_ROW", 64)
    sim, got, want = run_fp8(150, 70, 300, 3, "cooperative", 4, 7)
    np.testing.assert_array_equal(got, want)
    assert sim.wgmmas == 4 * 5 * 2 * 2


# (M, N, K, grid, persistent, tile width, D's format, ldd, seed) of 256-row tiles
# (wgmma.tall): two 64-row blocks per consumer against one B stage; ldd a multiple of 16
# bytes takes the copy engine's store path (each block's boxes after the other's), else
# D leaves the registers
TALL_CASES = [
    (300, 70, 130, 2, True, 64, "f32", None, None),  # row tails past 256 and in wg 2's block 1
    (300, 70, 450, 1, True, 64, "f32", None, 1),     # 4 tiles on 1: ring wraps, copies late
    (520, 72, 130, 3, True, 64, "f32", 76, 2),       # 3 row tiles, a column tail; the rotation
    (300, 64, 200, 2, True, 64, "f16", 64, 3),       # 16-bit D through the copy engine
    (200, 128, 70, 2, False, 128, "bf16", 136, 4),   # one region per workgroup: the second's
    (300, 70, 0, 2, True, 64, "f32", 72, None),      # K = 0: D = C     (rows are past M)
]


@pytest.mark.parametrize("M,N,K,grid,persistent,bn,out,ldd,seed", TALL_CASES)
def test_tall_tiles_exact(tma_store, M, N, K, grid, persistent, bn, out, ldd, seed):
    """A 256-row tile: each consumer's two 64-row blocks read the right rows of A's 256-row
    stage, and its epilogue writes them to rows 128·(wg-1) + 64·block; every element once."""
    fmt = "bf16" if out == "bf16" else "f16"
    sim, got, want, untouched = _run(M, N, K, grid, "cooperative", persistent, fmt=fmt,
                                     out=out, seed=seed, ldd=ldd, bm=256, bn=bn)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    regions = -(-M // 256) * -(-N // bn) if persistent else grid
    assert sim.wgmmas == regions * -(-K // 64) * 4 * 2 * 2   # k16 steps x blocks x consumers
