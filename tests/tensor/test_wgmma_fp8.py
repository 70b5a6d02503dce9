"""FP8 (E4M3/E5M2) workgroup tensor_matmul (targets/ptx/tensor/wgmma_fp8.py) on the CPU:
the language surface of per-tensor scales and its diagnostics; on sm_90a the wgmma
pipeline's structure (u8 tensor maps, m64nNk32 FP8 wgmma, fma.rn of the scale with C) and
ptxas (sm_90a: no spills at the 168-register cap); every other profile replays and
assembles; the split replay regions on the CPU PTX interpreter against the float oracle bit
for bit (M/N/K tails, mixed formats, per-tensor scales, fused epilogues, f32/f16/bf16 D,
the persistent tile loop) with poisoned padding; and the pipeline's own epilogue (its C,
scale and bias addressing through the wgmma accumulator mapping) on the interpreter with
known accumulators. tests/gpu/test_gemm_fp8.py runs the same kernels on the H200.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import EPILOGUES, epilogue_oracle
from tests.support import tensor_oracle as O
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.ptx import ops
from toolchain.compiler.targets.ptx.tensor import tma, wgmma_fp8

from . import narrow_cases as NC
from .kernels import compile_ptx
from .ptx_sim import Sim, f32_bits
from .test_wgmma import _usage
from .test_wgmma_epilogue import _bias as epilogue_bias, _round, always, fake_accumulators, \
    fake_consumer

ALPHA, BETA, LO, HI = 0.3, -1.5, -20.0, 30.0
SA, SB = 0.5, 4.0                    # powers of two: s * S is exact


# ---------------------------------------------------------------- language surface
BAD = [
    ("a_scale_type: f32", "a_scale_type: ue8m0", "E0340", "takes one f32 scale"),
    ("a_scale_type: f32, a_scale: sa", "a_scale_type: f32, a_scale: a", "E0343",
     "must be a float32*"),
    ("a_scale_mode: per_tensor, a_scale_type: f32, a_scale: sa",
     "a_scale_mode: block32, a_scale_type: f32, a_scale: a", "E0340",
     "tables hold ue8m0 or ue4m3 scales, not f32"),
    ("a_scale: sa", "a_scale: sa, ldsa: 4", "E0340", "a per_tensor scale is one value"),
]


@pytest.mark.parametrize("old,new,code,message", BAD)
def test_scale_misuse_is_a_located_diagnostic(old, new, code, message):
    src = fp8_source().replace(old, new, 1)
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == code and message in d.message and d.span is not None, d


@pytest.mark.parametrize("old,new,message", [
    ("result_type: bf16", "result_type: i32", "f32, f16 or bf16 result"),
    ("a_type: e4m3", "a_type: i8", "E4M3/E5M2 for both A and B"),
    ("shape: m128n256k128", "shape: m128n72k128", "multiples of 16"),
])
def test_capability_refusals(old, new, message):
    src = fp8_source().replace(old, new)
    if "i8" in new:
        src = src.replace("a: uint8*", "a: int8*")
    if "i32" in new:
        src = src.replace("d: uint16*", "d: int32*")
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    d = exc.value.diagnostics[0]
    assert d.code == "E0505" and message in d.message and d.span is not None, d


def test_per_tensor_scale_on_a_subgroup_tile_is_refused():
    src = """kernel k(a: uint8*, b: uint8*, c: float32*, d: float32*, s: float32*) {
  tensor_mma(a, b, c, d, shape: m16n8k32, input_type: e4m3, output_type: f32,
             a_scale_mode: per_tensor, a_scale_type: f32, a_scale: s);
}
"""
    with pytest.raises(CompileError) as exc:
        compile_ptx(src, "sm_90a")
    assert exc.value.diagnostics[0].code == "E0505"


# ---------------------------------------------------------------- sm_90a pipeline
PIPELINES = [("e4m3", "e4m3", "bf16", True, None, False, 256),
             ("e5m2", "e4m3", "f32", False, None, False, 128),
             ("e4m3", "e5m2", "f16", True, "matrix_bias_col", False, 256),
             ("e4m3", "e4m3", "bf16", True, "col_bias_relu", True, 256),
             ("e5m2", "e5m2", "f32", True, "scale_clamp", True, 64)]


@pytest.mark.parametrize("a,b,out,scaled,epilogue,persistent,bn", PIPELINES)
def test_pipeline_structure_and_ptxas(ptxas_path, a, b, out, scaled, epilogue, persistent,
                                      bn):
    text = compile_ptx(fp8_source(a, b, out, scaled, epilogue, persistent, bn=bn), "sm_90a")
    mmas = re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{bn}k32\.f32\.{a}\.{b} "
                      r"\{[^}]*\}, %rd\d+, %rd\d+, %p\d+, 1, 1;", text)
    assert len(mmas) == wgmma_fp8.BK // wgmma_fp8.KI            # one ring slot: 128 bytes
    assert text.count("tensormap.replace.tile.elemtype.global.b1024.b32") == 3    # A, B, D
    assert re.search(r"tensormap\.replace\.tile\.elemtype\.global\.b1024\.b32 \[%rd\d+\], 0;",
                     text)                                     # u8 maps
    assert re.search(r"tensormap\.replace\.tile\.elemtype\.global\.b1024\.b32 \[%rd\d+\], "
                     rf"{tma.ELEMTYPE[out]};", text)           # D's, stored through
    assert re.search(r"box_dim\.global\.b1024\.b32 \[%rd\d+\], 0, 128;", text)
    assert re.search(rf"box_dim\.global\.b1024\.b32 \[%rd\d+\], 1, {bn};", text)
    # the K chunk count: ceil(K / 128)
    assert re.search(r"add\.u32 (%r\d+), %r\d+, 127;\s+shr\.u32 \1, \1, 7;", text)
    start = text.index("wgmma.wait_group.sync.aligned 0")
    epi = text[start:text.index("setmaxnreg.dec.sync.aligned.u32 168", start)]
    # one combination per accumulator: fma.rn(S, s, C) scaled, else add.rn(S, C), in
    # each of the epilogue's two ways of storing D (the copy engine, the registers)
    assert "cp.async.bulk.tensor.2d.global" in epi and "st.global" in epi
    assert epi.count("fma.rn.f32") == 2 * (bn // 2 if scaled else 0)
    if epilogue is None or "bias" not in EPILOGUES[epilogue]:
        assert epi.count("add.rn.f32") == 2 * (0 if scaled else bn // 2)
    if scaled:                                                # s = a_scale * b_scale
        assert re.search(r"ld\.global\.f32 %f\d+, \[%rd\d+\];", text) or \
            re.search(r"ld\.f32 %f\d+, \[%rd\d+\];", text)
    assert ".maxntid 384, 1, 1" in text and ".minnctapersm 1" in text
    usage = _usage(ptxas_path, text, "sm_90a")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in usage, usage
    assert "warning" not in usage.lower(), usage


def test_explain_states_the_form(tmp_path):
    from toolchain.compiler.driver import Options, compile_file
    path = tmp_path / "g.mettle"
    path.write_text(fp8_source())
    for arch, form in (("sm_90a", "the sm_90a FP8 wgmma pipeline"),
                       ("sm_89", "split regions on the FP8 warp MMA (sm_89 has no wgmma/TMA"),
                       ("sm_80", "split replay regions (sm_80 has no wgmma/TMA")):
        r = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, explain=True))
        assert f"tensor_matmul: FP8 e4m3xe4m3 -> bf16, per-tensor scales: {form}" in r.explain


def test_unsupported_shape_takes_the_split_path_on_sm90a(ptxas):
    text = compile_ptx(fp8_source(bm=64, bn=64), "sm_90a")
    assert "wgmma" not in text and "setmaxnreg" not in text and "fma.rn.f32" in text
    ptxas(text, "sm_90a")


@pytest.mark.parametrize("arch", ["sm_89", "sm_80", "sm_121a", "portable"])
@pytest.mark.parametrize("out,epilogue", [("bf16", "col_bias_relu"), ("f32", None)])
def test_other_profiles_replay_and_assemble(ptxas, arch, out, epilogue):
    text = compile_ptx(fp8_source(out=out, epilogue=epilogue), arch)
    assert "wgmma" not in text and "setmaxnreg" not in text and "fma.rn.f32" in text
    ptxas(text, {"portable": "sm_75"}.get(arch, arch))


# ---------------------------------------------------------------- the CPU interpreter
def _operands(rng, a_fmt, b_fmt, M, N, K):
    """Stored A (row, padded), B (col, padded), C (f32, padded) and the exact float64
    sum S = A*B (every partial sum exact)."""
    a, b = NC.fp8_codes(rng, a_fmt, (M, K)), NC.fp8_codes(rng, b_fmt, (K, N))
    S = O.decode_array(a_fmt, a) @ O.decode_array(b_fmt, b)
    c = rng.integers(-8, 8, (M, N)).astype(np.float64)
    bufs = {}
    bufs["a"], lda = NC.stored(a_fmt, a, "row", False, 3)
    bufs["b"], ldb = NC.stored(b_fmt, b, "col", False, 5)
    bufs["c"], ldc = NC.stored("f32", c, "row", False, 2)
    return bufs, (lda, ldb, ldc), S, c


def _bias(rng, epilogue, out, M, N):
    """test_wgmma_epilogue's bias, or none (an empty buffer) without a bias mode."""
    if epilogue is None or "bias_mode" not in EPILOGUES[epilogue]:
        return None, np.zeros(4, NC.CARRIER[out]), 1
    return epilogue_bias(rng, epilogue, out, M, N)


def _run(ptx, out, M, N, K, bufs, lds, ldd, scaled, bias_buf, ldbias, grid, block):
    dty = "float32" if out == "f32" else "uint16"
    d = np.full((M - 1) * ldd + N + 8, NC.POISON[dty], dty)
    poison = d.copy()
    scales = (SA, SB) if scaled else (7.0, 9.0)          # unused without scales
    args = [("buf", w, bufs[w]) for w in "abc"] + [("buf", "d", d)] + \
        [("u32", v) for v in (M, N, K, *lds, ldd)] + \
        [("buf", "sa", np.array([scales[0]], np.float32)),
         ("buf", "sb", np.array([scales[1]], np.float32)),
         ("buf", "bias", bias_buf), ("u32", ldbias)] + \
        [("u32", f32_bits(v)) for v in (ALPHA, BETA, LO, HI)]
    mem = Sim(ptx, "gemm8", undefined=f32_bits(float("nan"))).run(grid, block, args)
    got = mem.read("d")
    return (got.view(np.uint32) if out == "f32" else got), poison, got


def _check(raw, got, poison, want, M, N, ldd):
    np.testing.assert_array_equal(O.logical(raw, M, N, "row", ldd), want)
    r, c = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(got.size, bool)
    untouched[O.index("row", ldd, r, c)] = False
    np.testing.assert_array_equal(got[untouched], poison[untouched])


SPLIT = [("e4m3", "e4m3", "f32", True, None, False),
         ("e5m2", "e4m3", "bf16", True, "matrix_bias_col", False),
         ("e4m3", "e5m2", "f16", False, "row_bias", False),
         ("e4m3", "e4m3", "bf16", True, "col_bias_relu", True),
         ("e5m2", "e5m2", "f32", True, "scale_clamp", True)]


@pytest.mark.parametrize("a,b,out,scaled,epilogue,persistent", SPLIT)
@pytest.mark.parametrize("arch", ["sm_121a", "sm_89"])
def test_split_regions_exact_against_the_oracle(arch, a, b, out, scaled, epilogue,
                                                persistent):
    """M, N, K = 36, 20, 13 over m32n16k128 regions (tails in all three), two subgroups a
    workgroup; S exact, s a power of two: t = fma(S, s, C) is exact, then the epilogue's
    f32 steps and D's one rounding must match the oracle bit for bit."""
    M, N, K = 36, 20, 13
    rng = np.random.default_rng(hash((a, b, out, epilogue, persistent)) % 2**32)
    bufs, lds, S, c = _operands(rng, a, b, M, N, K)
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N)
    t = (S * (SA * SB) if scaled else S) + c
    want = _round(out, epilogue_oracle(epilogue, t.astype(np.float32), bias, ALPHA, BETA,
                                       LO, HI))
    ptx = compile_ptx(fp8_source(a, b, out, scaled, epilogue, persistent, bm=32, bn=16),
                      arch)
    assert "wgmma" not in ptx
    ldd = N + 4
    grid = 3 if persistent else 2 * 2                     # persistent: 3 over 4 tiles
    raw, poison, got = _run(ptx, out, M, N, K, bufs, lds, ldd, scaled, bbuf, ldbias,
                            (grid, 1), 64)
    _check(raw, got, poison, want, M, N, ldd)


# ---------------------------------------------------------------- the pipeline's epilogue
def _fake_native(em, g, tid, end, scale, fused, tiles, share=None):
    """The sm_90a region with its copy engine and wgmma main loop replaced (the CPU
    interpreter has neither): each consumer accumulator register holds 3*row + column of
    its element by the wgmma m64nNk32 f32 layout (that of m64nNk16: lane l of warp w of
    consumer q: rows 64(q-1) + 16w + l/4 (+8), columns 8j + 2(l%4) (+1); register
    4j + 2*half + e), then the real epilogue runs, in the consumers' real tile loop."""
    wg, lane, warp, wtid = fake_consumer(em, tid, end)
    g, close = wgmma_fp8._tile_loop(em, g, tiles, "fake")
    wgmma_fp8._epilogue(em, g, wtid, wg, fake_accumulators(em, g, wg, lane, warp), scale,
                        fused)
    close()
    em.put(ops.bra(end, uniform=True))


_always = always(wgmma_fp8.threads)


@pytest.mark.parametrize("out,scaled,epilogue,persistent", [
    ("bf16", True, None, False), ("f32", True, "matrix_bias_col", False),
    ("f16", False, "row_bias", False), ("bf16", True, "col_bias_relu", True),
    ("f32", False, "scale_clamp", True)])
def test_pipeline_epilogue_exact_on_the_interpreter(monkeypatch, out, scaled, epilogue,
                                                    persistent):
    """The sm_90a epilogue (C, scale and bias through the accumulator mapping, batches,
    M/N predicates, fma/add, the rounded pair stores) with known accumulators:
    m128n64 regions over M x N = 150 x 70, against the oracle bit for bit; D's padding
    stays poisoned."""
    monkeypatch.setattr(wgmma_fp8, "native_pred", _always)
    monkeypatch.setattr(wgmma_fp8, "_native", _fake_native)
    M, N = 150, 70
    rng = np.random.default_rng(len(out) * 11 + persistent)
    cmat = rng.integers(-8, 8, (M, N)).astype(np.float64)
    c, ldc = NC.stored("f32", cmat, "row", False, 2)
    bufs = {"a": np.zeros(8, np.uint8), "b": np.zeros(8, np.uint8), "c": c}
    bias, bbuf, ldbias = _bias(rng, epilogue, out, M, N)
    r, col = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    S = (3 * r + col).astype(np.float64)
    t = (S * (SA * SB) if scaled else S) + cmat
    want = _round(out, epilogue_oracle(epilogue, t.astype(np.float32), bias, ALPHA, BETA,
                                       LO, HI))
    ptx = compile_ptx(fp8_source("e4m3", "e4m3", out, scaled, epilogue, persistent, bn=64),
                      "sm_90a")
    assert "wgmma" not in ptx
    tiles = 3 if persistent else 2 * 2
    ldd = N + 4
    raw, poison, got = _run(ptx, out, M, N, 0, bufs, (16, 16, ldc), ldd, scaled, bbuf,
                            ldbias, (tiles, 1), 384)
    _check(raw, got, poison, want, M, N, ldd)
