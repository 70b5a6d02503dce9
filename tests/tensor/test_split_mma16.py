"""The 16-bit workgroup region's split regions on the warp MMA (targets/ptx/tensor/
split_mma16.py, docs/reference/gemm.md "Split regions") on the CPU: the PTX interpreter
runs the generated kernels against the float oracle bit for bit (small-integer f16/bf16
values: every partial sum is exact, so only a wrong product, a lost or doubled K element
or a wrong element could differ) on sm_90a and sm_80, through each load width the
run-time alignment test picks (16/8/4 bytes, 2-byte loads), K below, at and past one
step, M/N edges (clamped loads, predicated stores: D's padding stays poisoned, A/B's
padding is NaN), misaligned bases, f32/f16/bf16 D, epilogues, the persistent tile loop,
K = 0 with -0 in C, and a partial warp (exact replay); ptxas accepts the kernels on sm_80
and sm_90a (no spills at the pipeline's 168-register cap); WMMA keeps aligned f32
regions; --explain names the form. tests/gpu/test_gemm_split16.py runs them on the H200.
"""
from __future__ import annotations

import numpy as np
import pytest

from bench.wgmma_kernels import epilogue_oracle, gemm_source

from . import narrow_cases as NC
from .kernels import compile_ptx
from .ptx_sim import f32_bits
from .test_fp8_split_mma import CountingSim, assert_widest, poisoned_d, run_checked
from .test_wgmma import _usage
from .test_wgmma_epilogue import _round
from .test_wgmma_fp8 import ALPHA, BETA, HI, LO, _bias

NAN16 = {"f16": 0x7E00, "bf16": 0x7FC0}          # quiet NaNs: a stray read shows


def run_case(arch, fmt="f16", out="f32", epilogue=None, persistent=False, M=70, N=40, K=200,
             pad_a=0, pad_b=8, block=64, bm=64, bn=64, shift_a=0, shift_b=0, ldd_pad=3,
             neg_zero_c=False):
    """Compile, run on the interpreter, check against the oracle; return the Sim.
    `shift_a`/`shift_b`: the kernel passes a + shift_a, b + shift_b (elements: misaligned
    bases). `neg_zero_c`: C's even elements are -0."""
    rng = np.random.default_rng(M * 131 + N * 7 + K + pad_a + 3 * pad_b + len(arch))
    a = rng.integers(-4, 5, (M, K)).astype(np.float64)
    b = rng.integers(-4, 5, (K, N)).astype(np.float64)
    cm = rng.integers(-8, 8, (M, N)).astype(np.float64)
    if neg_zero_c:
        cm[:, ::2] = -0.0
    bufs, lds = {}, []
    for name, f, vals, layout, pad in (("a", fmt, a, "row", pad_a), ("b", fmt, b, "col", pad_b),
                                       ("c", "f32", cm, "row", 2)):
        bufs[name], ld = NC.stored(f, vals, layout, False, pad)
        if f != "f32":
            bufs[name][bufs[name] == NC.POISON["uint16"]] = NAN16[f]
        lds.append(ld)
    for name, shift in (("a", shift_a), ("b", shift_b)):
        bufs[name] = np.concatenate([np.full(shift, NAN16[fmt], np.uint16), bufs[name]])
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N)
    t = (a @ b + cm).astype(np.float32)
    if neg_zero_c and K == 0:
        t = cm.astype(np.float32)                  # -0 kept: D = C bit for bit
    want = _round(out, epilogue_oracle(epilogue, t, bias, ALPHA, BETA, LO, HI))
    src = gemm_source(fmt, bm=bm, bn=bn, out=out, epilogue=epilogue, persistent=persistent)
    if shift_a or shift_b:
        src = src.replace("tensor_matmul(a, b,", f"tensor_matmul(a + {shift_a}, b + {shift_b},")
    ptx = compile_ptx(src, arch)
    ldd = N + ldd_pad
    d = poisoned_d(out, M, N, ldd)
    args = [("buf", w, bufs[w]) for w in "abc"] + [("buf", "d", d)] + \
        [("u32", v) for v in (M, N, K, *lds, ldd)]
    if epilogue:
        args += [("buf", "bias", bbuf), ("u32", ldbias)] + \
            [("u32", f32_bits(v)) for v in (ALPHA, BETA, LO, HI)]
    tiles = 3 if persistent else -(-M // bm) * -(-N // bn)
    return run_checked(CountingSim(ptx, "gemm"), (tiles, 1), block, args, d, out, ldd, want)


ARCHS = ["sm_90a", "sm_80"]
# (pad of A's rows, pad of B's columns) at K = 200 -> the load width the run-time test picks
WIDTHS = {16: (0, 8), 8: (4, 8), 4: (2, 8), 2: (1, 8)}
WIDE_LOAD = {16: "v4.b32", 8: "v2.b32", 4: "b32", 2: "u16"}


def _widest(sim, width):
    assert_widest(sim, width, WIDE_LOAD)


@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("arch", ARCHS)
def test_each_load_width_exact(arch, width):
    """M x N x K = 70 x 40 x 200: six 32-element steps (both buffers and the loop's
    exits) and an 8-element masked tail; M/N edges in both directions; the width's loads
    ran. ldd = N + 3 keeps WMMA out, so the aligned case runs here too."""
    pad_a, pad_b = WIDTHS[width]
    sim = run_case(arch, pad_a=pad_a, pad_b=pad_b)
    assert sim.mmas > 0
    _widest(sim, width)


@pytest.mark.parametrize("shifts,width", [((8, 4), 8), ((2, 0), 4), ((1, 0), 2), ((0, 3), 2)])
def test_misaligned_bases(shifts, width):
    """Leading dimensions 16-byte multiples, A/B bases moved by a few elements: the
    run-time test sees the bases too (a NaN before each matrix would show a wrong read)."""
    sim = run_case("sm_90a", K=96, pad_a=8, pad_b=8, shift_a=shifts[0], shift_b=shifts[1])
    _widest(sim, width)


@pytest.mark.parametrize("K", [0, 5, 32, 64, 101])
@pytest.mark.parametrize("arch", ARCHS)
def test_k_below_at_and_past_a_step(arch, K):
    """K = 0 (D = C), a tail alone, whole steps alone, steps and a tail that ends inside
    the second half of a lane's elements."""
    sim = run_case(arch, M=40, N=36, K=K, pad_a=3 if K == 5 else 1, pad_b=5)
    assert sim.mmas > 0 or K == 0


@pytest.mark.parametrize("K", [0, 3])
def test_negative_zero_c(K):
    """The accumulators start at -0: with K = 0 a -0 in C reaches D as -0 (the replay's
    D = C); with products, only exact sums and one add."""
    run_case("sm_80", M=32, N=32, K=K, pad_a=1, pad_b=1, neg_zero_c=True)


@pytest.mark.parametrize("fmt,out,epilogue,persistent", [
    ("f16", "f32", "matrix_bias_col", False),
    ("bf16", "f32", "row_bias", False),
    ("f16", "f16", "col_bias_relu", False),
    ("bf16", "bf16", "scale_clamp", True),
    ("f16", "f16", None, True),
    ("bf16", "bf16", "matrix_bias", False)])
@pytest.mark.parametrize("arch", ARCHS)
def test_formats_and_epilogues_exact(arch, fmt, out, epilogue, persistent):
    sim = run_case(arch, fmt, out, epilogue, persistent, M=50, N=40, K=72, pad_a=1)
    assert sim.mmas > 0


def test_rounded_result_aligned_still_on_the_mma():
    """f16 D has no WMMA form: aligned operands and a whole region run on the MMA too."""
    sim = run_case("sm_80", "f16", "f16", M=64, N=64, K=64, pad_a=0, pad_b=0, ldd_pad=0)
    assert sim.mmas > 0
    _widest(sim, 16)


def test_partial_warp_replays_exactly():
    """48 work-items: the second warp is partial, so its regions replay (no MMA may run
    with a partial warp: the interpreter refuses that); the first warp's use the MMA."""
    sim = run_case("sm_90a", "bf16", "bf16", M=64, N=32, K=40, block=48, bm=64, bn=32,
                   pad_a=1)
    assert sim.mmas > 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_121a"])
@pytest.mark.parametrize("fmt,out", [("f16", "f32"), ("bf16", "bf16")])
def test_instruction_form_per_profile(arch, fmt, out):
    """The m16n8k16 MMA and every load width are in the kernel; an f32 D keeps the WMMA
    interior behind its alignment test; a rounded D has none."""
    text = compile_ptx(gemm_source(fmt, out=out), arch)
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{fmt}.{fmt}.f32" in text
    for kind in ("ld.global.v4.b32", "ld.global.v2.b32", "ld.global.b32", "ld.global.u16"):
        assert kind in text
    assert ("wmma.mma" in text) == (out == "f32")


def test_profiles_without_mma_sync_keep_replay():
    text = compile_ptx(gemm_source("f16", out="f16"), "portable")
    assert "mma.sync.aligned.m16n8k16" not in text and "trp_k" in text


CONFIGS = [("f16", "f32", None, False), ("bf16", "bf16", "col_bias_relu", False),
           ("f16", "f16", "scale_clamp", True), ("bf16", "f32", "matrix_bias_col", True)]


@pytest.mark.parametrize("fmt,out,epilogue,persistent", CONFIGS)
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_ptxas_accepts_without_spills(ptxas_path, arch, fmt, out, epilogue, persistent):
    """The 128 x 256 kernel (on sm_90a with the pipeline and its 168-register cap): ptxas
    -v reports no spills."""
    text = compile_ptx(gemm_source(fmt, out=out, epilogue=epilogue, persistent=persistent),
                       arch)
    usage = _usage(ptxas_path, text, arch)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in usage, usage


@pytest.mark.parametrize("lda", ["4104", "4100", "4103", "4096"])
def test_static_leading_dimensions_assemble(ptxas, lda):
    """Constant lda/ldb (aligned and not): the alignment tests fold the constants."""
    src = gemm_source("f16").replace("lda: lda, ldb: ldb", f"lda: {lda}, ldb: {lda}")
    for arch in ("sm_90a", "sm_80"):
        ptxas(compile_ptx(src, arch), arch)


def test_explain_names_the_split_form(tmp_path):
    from toolchain.compiler.driver import Options, compile_file
    for out, where in (("f32", " where WMMA's alignment test fails"), ("bf16", "")):
        path = tmp_path / f"g{out}.mettle"
        path.write_text(gemm_source("bf16", bm=64, bn=64, out=out))
        for arch in ("sm_90a", "sm_80"):
            r = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, explain=True))
            assert f"; split regions on the warp MMA (mma.sync m16n8k16){where}" in r.explain, \
                r.explain
        r = compile_file(str(path), Options(emit="ptx", gpu_arch="portable", explain=True))
        assert "warp MMA" not in r.explain, r.explain


def test_the_wmma_choice_is_uniform_over_the_workgroup():
    """Every warp must pick the same tiling (WMMA's 32 x 64 or the MMA's 32 x 32 regions),
    so the WMMA test reads no per-warp state (activemask): a partial warp replays inside
    the WMMA form's own regions instead."""
    text = compile_ptx(gemm_source("f16"), "sm_80")
    branch = text.index("bra.uni $L__s16_mma")
    test = text[text.rindex("mov.u64", 0, branch):branch]
    assert "setp.ge.and.u32" in test and "activemask" not in test, test


def test_sixteen_wide_sub_regions():
    """A 48 x 48 workgroup region: 16 x 16 MMA regions (one m16 row tile, two n8 tiles),
    nine of them over two warps."""
    sim = run_case("sm_80", "bf16", "f32", M=50, N=60, K=40, pad_a=1, bm=48, bn=48)
    assert sim.mmas > 0


@pytest.mark.parametrize("out,epilogue,persistent", [("f32", None, True),
                                                     ("bf16", "col_bias_relu", False)])
@pytest.mark.parametrize("arch", ARCHS)
def test_width_232_regions_exact(arch, out, epilogue, persistent):
    """128 x 232 regions (`m128n232k64`: no whole 16 columns) split as 240 columns with N
    cut at each region's own last column: exact, tiles meeting at column 232 and the last
    one stopping at N, D's padding untouched."""
    sim = run_case(arch, out=out, epilogue=epilogue, persistent=persistent, M=150, N=470,
                   K=72, bm=128, bn=232, block=128)
    assert sim.mmas > 0
