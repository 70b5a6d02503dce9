"""The FP8 workgroup region's split regions on the warp MMA (targets/ptx/tensor/
fp8_split_mma.py) on the CPU: the PTX interpreter runs the generated kernels against the
float oracle bit for bit (small exact FP8 values: every partial sum is exact, so only a
wrong product, a lost or doubled K byte or a wrong element could differ) on sm_90a (exact
f16 decode + m16n8k16 f16 MMAs) and sm_89 (m16n8k32 FP8 MMAs), through each load width
the run-time alignment test picks (16/8/4 bytes, single bytes), K below, at and past one
step, M/N edges (clamped loads, predicated stores: D's padding stays poisoned), epilogues,
mixed formats, the persistent tile loop and a partial warp (exact replay); ptxas accepts
the kernels on sm_90a (no spills at the pipeline's 168-register cap), sm_89 and sm_120a;
--explain names the form. tests/gpu/test_gemm_fp8_split.py runs them on the H200.
"""
from __future__ import annotations

import numpy as np
import pytest

from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import epilogue_oracle
from tests.support import tensor_oracle as O
from toolchain.compiler.targets.ptx.tensor import fp8_split_mma

from . import narrow_cases as NC
from .kernels import compile_ptx
from .ptx_sim import Sim, f32_bits
from .test_wgmma import _usage
from .test_wgmma_epilogue import _round
from .test_wgmma_fp8 import ALPHA, BETA, HI, LO, SA, SB, _bias


class CountingSim(Sim):
    """The interpreter, counting global loads by vector width and element type."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.loads: dict[str, int] = {}

    def _ld(self, th, parts, ops) -> None:
        key = ".".join(parts[2:]) if parts[1] == "global" else ".".join(parts[1:])
        self.loads[key] = self.loads.get(key, 0) + 1
        super()._ld(th, parts, ops)


def run_case(arch, a="e4m3", b="e4m3", out="bf16", scaled=True, epilogue=None,
             persistent=False, M=70, N=40, K=200, pad_a=0, pad_b=8, block=64, bm=64, bn=32,
             shift_a=0, shift_b=0):
    """Compile, run on the interpreter, check against the oracle; return the Sim.
    `shift_a`/`shift_b`: the kernel passes a + shift_a, b + shift_b (misaligned bases)."""
    rng = np.random.default_rng(M * 131 + N * 7 + K + pad_a + 3 * pad_b + len(arch))
    ac, bc = NC.fp8_codes(rng, a, (M, K)), NC.fp8_codes(rng, b, (K, N))
    S = O.decode_array(a, ac) @ O.decode_array(b, bc)
    cm = rng.integers(-8, 8, (M, N)).astype(np.float64)
    bufs, lds = {}, []
    for name, fmt, vals, layout, pad in (("a", a, ac, "row", pad_a), ("b", b, bc, "col", pad_b),
                                         ("c", "f32", cm, "row", 2)):
        bufs[name], ld = NC.stored(fmt, vals, layout, False, pad)
        lds.append(ld)
    for name, shift in (("a", shift_a), ("b", shift_b)):
        bufs[name] = np.concatenate([np.full(shift, 0x7F, np.uint8), bufs[name]])  # NaNs
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N)
    t = (S * (SA * SB) if scaled else S) + cm
    want = _round(out, epilogue_oracle(epilogue, t.astype(np.float32), bias, ALPHA, BETA,
                                       LO, HI))
    src = fp8_source(a, b, out, scaled, epilogue, persistent, bm=bm, bn=bn)
    if shift_a or shift_b:
        src = src.replace("tensor_matmul(a, b,", f"tensor_matmul(a + {shift_a}, b + {shift_b},")
    ptx = compile_ptx(src, arch)
    ldd = N + 3
    d = poisoned_d(out, M, N, ldd)
    scales = (SA, SB) if scaled else (7.0, 9.0)
    args = [("buf", w, bufs[w]) for w in "abc"] + [("buf", "d", d)] + \
        [("u32", v) for v in (M, N, K, *lds, ldd)] + \
        [("buf", "sa", np.array([scales[0]], np.float32)),
         ("buf", "sb", np.array([scales[1]], np.float32)),
         ("buf", "bias", bbuf), ("u32", ldbias)] + \
        [("u32", f32_bits(v)) for v in (ALPHA, BETA, LO, HI)]
    tiles = 3 if persistent else -(-M // bm) * -(-N // bn)
    return run_checked(CountingSim(ptx, "gemm8"), (tiles, 1), block, args, d, out, ldd, want)


def poisoned_d(out: str, M: int, N: int, ldd: int) -> np.ndarray:
    """D (row-major, leading dimension ldd, 8 elements of padding) filled with poison."""
    dty = "float32" if out == "f32" else "uint16"
    return np.full((M - 1) * ldd + N + 8, NC.POISON[dty], dty)


def run_checked(sim, grid, block, args, d, out: str, ldd: int, want):
    """Run the kernel; D's M x N region must equal `want` bit for bit and every other
    element of d keep its poison. Returns the simulator (its load counts)."""
    M, N = want.shape
    poison = d.copy()
    got = sim.run(grid, block, args).read("d")
    raw = got.view(np.uint32) if out == "f32" else got
    np.testing.assert_array_equal(O.logical(raw, M, N, "row", ldd), want)
    r, c = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(got.size, bool)
    untouched[O.index("row", ldd, r, c)] = False
    np.testing.assert_array_equal(got[untouched], poison[untouched])
    return sim


def assert_widest(sim, width: int, wide_load: dict) -> None:
    """The run used loads of `width` bytes (wide_load[width]) and none wider."""
    assert sim.loads.get(wide_load[width], 0) > 0, sim.loads
    for w, kind in wide_load.items():
        if w > width:
            assert kind not in sim.loads, (w, sim.loads)


ARCHS = ["sm_90a", "sm_89"]
# (pad of A's rows, pad of B's columns) at K = 200 -> the load width the run-time test picks
WIDTHS = {16: (8, 24), 8: (0, 8), 4: (4, 8), 1: (3, 8)}
WIDE_LOAD = {16: "v4.b32", 8: "v2.b32", 4: "b32", 1: "u8"}


@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("arch", ARCHS)
def test_each_load_width_exact(arch, width):
    """M x N x K = 70 x 40 x 200: three 64-byte steps (both buffers and the loop's exits)
    and an 8-byte masked tail; M/N edges in both directions; the width's loads ran."""
    pad_a, pad_b = WIDTHS[width]
    sim = run_case(arch, pad_a=pad_a, pad_b=pad_b)
    assert sim.mmas > 0
    assert_widest(sim, width, WIDE_LOAD)


@pytest.mark.parametrize("shifts,width", [((8, 24), 8), ((4, 0), 4), ((3, 0), 1)])
def test_misaligned_bases(shifts, width):
    """Leading dimensions 16-byte multiples, A/B bases moved by a few bytes: the run-time
    test sees the bases too (a NaN byte before each matrix would show a wrong read)."""
    sim = run_case("sm_90a", K=96, pad_a=0, pad_b=0, shift_a=shifts[0], shift_b=shifts[1])
    assert_widest(sim, width, WIDE_LOAD)


@pytest.mark.parametrize("K", [0, 37, 64, 128, 101])
@pytest.mark.parametrize("arch", ARCHS)
def test_k_below_at_and_past_a_step(arch, K):
    """K = 0 (t = combine(0, s, C)), a tail alone, whole steps alone, a step and a tail
    that ends inside the second half of a lane's bytes."""
    sim = run_case(arch, M=40, N=36, K=K, pad_a=3 if K == 37 else 0, pad_b=5)
    assert sim.mmas > 0 or K == 0


@pytest.mark.parametrize("a,b,out,scaled,epilogue,persistent", [
    ("e5m2", "e4m3", "f32", True, "matrix_bias_col", False),
    ("e4m3", "e5m2", "f16", False, "row_bias", False),
    ("e5m2", "e5m2", "bf16", True, "col_bias_relu", True),
    ("e4m3", "e4m3", "f32", True, "scale_clamp", False)])
@pytest.mark.parametrize("arch", ARCHS)
def test_formats_and_epilogues_exact(arch, a, b, out, scaled, epilogue, persistent):
    sim = run_case(arch, a, b, out, scaled, epilogue, persistent, M=50, N=40, K=72)
    assert sim.mmas > 0


def test_partial_warp_replays_exactly():
    """48 work-items: the second warp is partial, so its regions replay (no MMA may run
    with a partial warp: the interpreter refuses that); the first warp's use the MMA."""
    sim = run_case("sm_90a", M=64, N=32, K=40, block=48, bm=64, bn=32)
    assert sim.mmas > 0


@pytest.mark.parametrize("arch,head", [
    ("sm_90a", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
    ("sm_120a", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")])
def test_instruction_form_per_profile(arch, head):
    text = compile_ptx(fp8_source(), arch)
    assert head in text
    if arch == "sm_90a":                        # the exact decode of each byte pair
        assert "cvt.rn.f16x2.e4m3x2" in text and "m16n8k32" not in text
    for kind in ("ld.global.v4.b32", "ld.global.v2.b32", "ld.global.b32", "ld.global.u8"):
        assert kind in text


CONFIGS = [("bf16", None, False), ("f32", "col_bias_relu", False), ("f16", "scale_clamp", True),
           ("f32", "matrix_bias_col", True)]


@pytest.mark.parametrize("out,epilogue,persistent", CONFIGS)
@pytest.mark.parametrize("arch", ["sm_90a", "sm_89", "sm_120a"])
def test_ptxas_accepts_without_spills(ptxas_path, arch, out, epilogue, persistent):
    """The 128 x 256 kernel (on sm_90a with the pipeline and its 168-register cap) and
    e5m2 A: ptxas -v reports no spills."""
    text = compile_ptx(fp8_source("e5m2", "e4m3", out, True, epilogue, persistent), arch)
    usage = _usage(ptxas_path, text, arch)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in usage, usage


@pytest.mark.parametrize("lda", ["4104", "4100", "4103", "4096"])
def test_static_leading_dimensions_assemble(ptxas, lda):
    """Constant lda/ldb (aligned and not): the alignment test folds the constants."""
    src = fp8_source().replace("lda: lda, ldb: ldb", f"lda: {lda}, ldb: {lda}")
    for arch in ("sm_90a", "sm_89"):
        ptxas(compile_ptx(src, arch), arch)


def test_explain_names_the_split_form(tmp_path):
    from toolchain.compiler.driver import Options, compile_file
    path = tmp_path / "g.mettle"
    path.write_text(fp8_source(bm=64, bn=64))
    for arch, form in (("sm_90a", "split regions on the FP8 warp MMA (no FP8 wgmma form"),
                       ("sm_89", "split regions on the FP8 warp MMA (sm_89 has no wgmma"),
                       ("sm_80", "split replay regions (sm_80 has no wgmma")):
        r = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, explain=True))
        assert f"per-tensor scales: {form}" in r.explain, r.explain


def test_sub_regions():
    from toolchain.compiler.ir.tensor import TensorDesc
    wg = TensorDesc(128, 256, 128, "e4m3", "e4m3", "f32", "f32", b_layout="col",
                    scope="workgroup")
    small = TensorDesc(48, 16, 128, "e4m3", "e4m3", "f32", "f32", b_layout="col",
                       scope="workgroup")
    assert (fp8_split_mma.sub_desc(wg, wg).m, fp8_split_mma.sub_desc(wg, wg).n) == (32, 32)
    assert (fp8_split_mma.sub_desc(small, small).m,
            fp8_split_mma.sub_desc(small, small).n) == (16, 16)


@pytest.mark.parametrize("arch", ARCHS)
def test_width_232_regions_exact(arch):
    """FP8 128 x 232 regions split as 240 columns with N cut at each region's own last
    column (wgmma_split.cut_width): exact on the warp MMA."""
    sim = run_case(arch, out="f32", persistent=True, M=150, N=470, K=72, bm=128, bn=232,
                   block=128)
    assert sim.mmas > 0
