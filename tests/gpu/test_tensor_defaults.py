"""Hardware: GEMM grids whose tensor_matmul writes no layout option (issue 12).

The language default descriptor reads B column-major (B[q, c] at b[c * ldb + q]); before
that default was honoured, this GEMM returned uncorrelated results on the H200 (relative
error 1.4). Random non-zero normal data (rounded to the input format), padded leading
dimensions, D poisoned with NaN: every in-range output must match a float64 reference
(torch when installed, else numpy) to the format's accumulation tolerance, and every
padding element must keep its poison. Cases cover the native interior with K tails
(sm_90a WMMA), M/N edges, bf16, and f64 on the portable profile, which has no f64 WMMA
and so runs exact cooperative replay (PTX 6.4 / compute_75, JIT-compiled by the driver).
Two whole tiles complete it: u4 WMMA relying on the defaults (refused before the fix) and
an f64 tile replayed on the portable profile.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.support import tensor_oracle as O
from tests.tensor.kernels import carrier, compile_ptx
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

SOURCE = """kernel gemm(a: {t}*, b: {t}*, c: {r}*, d: {r}*, m: uint32, n: uint32, k: uint32,
             lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32) {{
  var column: uint32 = (block.x * {warps} + thread.x / 32) * {rn};
  tensor_matmul(a, b, c, d, block.y * {rm}, column, m, n, k, shape: {shape},
                input_type: {fmt}, output_type: {acc},
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);
}}
"""
RESULT = {"f32": "float32", "f64": "float64"}


def rounded(rng, fmt: str, shape) -> tuple[np.ndarray, np.ndarray]:
    """(storage carrier values, the exact float64 values they hold): non-zero normals."""
    x = rng.standard_normal(shape)
    x[x == 0] = 0.5
    if fmt == "f16":
        h = x.astype(np.float16)
        return h.view(np.uint16), h.astype(np.float64)
    if fmt == "bf16":
        bits = O.to_bf16_bits(x.astype(np.float32))
        return bits, O.bf16(bits).astype(np.float64)
    return x, x


def reference(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    try:
        import torch
    except ImportError:
        return a @ b + c
    return (torch.from_numpy(a) @ torch.from_numpy(b) + torch.from_numpy(c)).numpy()


def laid_out(vals: np.ndarray, layout: str, ld: int, poison) -> np.ndarray:
    rows, cols = vals.shape
    size = (rows - 1) * ld + cols if layout == "row" else (cols - 1) * ld + rows
    buf = np.full(size + 8, poison, dtype=vals.dtype)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    buf[O.index(layout, ld, r, c)] = vals
    return buf


CASES = [  # fmt, acc, shape, M, N, K, warps, profile (None: the local GPU's)
    ("f16", "f32", "m64n64k16", 512, 384, 512, 4, None),
    ("f16", "f32", "m16n16k16", 200, 136, 72, 2, None),
    ("bf16", "f32", "m32n32k16", 160, 96, 100, 2, None),
    ("f64", "f64", "m8n8k4", 75, 61, 45, 2, "portable"),
]
UNIT = {"f32": 2.0**-24, "f64": 2.0**-53}       # unit roundoff of the accumulator


@pytest.mark.parametrize("fmt,acc,shape,M,N,K,warps,profile", CASES,
                         ids=[f"{c[0]}-{c[3]}x{c[4]}x{c[5]}-{c[7] or 'local'}" for c in CASES])
def test_default_layout_gemm_grid_matches_reference(gpu_run, fmt, acc, shape, M, N, K,
                                                    warps, profile):
    rm, rn = (int(x) for x in shape[1:].split("k")[0].split("n"))
    rng = np.random.default_rng(M * N + K)
    a_st, a = rounded(rng, fmt, (M, K))
    b_st, b = rounded(rng, fmt, (K, N))
    c = rng.standard_normal((M, N)).astype(RESULT[acc]).astype(np.float64)
    lda, ldb, ldc, ldd = K + 8, K + 16, N + 4, N + 12          # A row, B col, C/D row
    poison = {"uint16": 0x7E00, "float64": np.nan}[carrier(fmt)]
    bufs = {"a": laid_out(a_st.astype(carrier(fmt)), "row", lda, poison),
            "b": laid_out(b_st.astype(carrier(fmt)), "col", ldb, poison),
            "c": laid_out(c.astype(RESULT[acc]), "row", ldc, np.nan),
            "d": laid_out(np.zeros((M, N), RESULT[acc]), "row", ldd, np.nan)}
    bufs["d"][:] = np.nan
    src = SOURCE.format(t=carrier(fmt), r=RESULT[acc], fmt=fmt, acc=acc, shape=shape,
                        rm=rm, rn=rn, warps=warps)
    ptx = compile_ptx(src, profile or detect_local_arch() or "sm_90a")
    grid = (-(-N // (rn * warps)), -(-M // rm))
    out = gpu_run(ptx, "gemm", grid, 32 * warps,
                  [Buffer(w, bufs[w].dtype.name, data=bufs[w], output=w == "d")
                   for w in "abcd"] +
                  [Scalar("uint32", v) for v in (M, N, K, lda, ldb, ldc, ldd)])["d"]
    got = O.logical(out, M, N, "row", ldd).astype(np.float64)
    want = reference(a, b, c)
    # K+1 roundings of an f32/f64 sum: |error| <= gamma_(K+1) * (|A||B| + |C|), doubled
    # for the tensor cores' unspecified internal order
    scale = np.abs(a) @ np.abs(b) + np.abs(c)
    err, tol = np.abs(got - want) / scale, 2 * (K + 1) * UNIT[acc]
    assert np.isfinite(got).all(), "an in-range output was not written"
    assert err.max() <= tol, f"max scaled error {err.max():.3g} (tolerance {tol:g})"
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert rel < 1e-5, f"relative error {rel:.3g}"
    r, cc = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index("row", ldd, r, cc)] = False
    assert np.isnan(out[untouched]).all(), "padding of D was overwritten"


def test_u4_tile_with_default_layouts(gpu_run):
    """`tensor_mma(a, b, c, d, shape: m8n8k32, input_type: u4, output_type: i32)` with no
    layout option: A row-major and B column-major nibble streams (LSB first)."""
    rng = np.random.default_rng(12)
    a, b = rng.integers(1, 16, (8, 32)), rng.integers(1, 16, (32, 8))
    c = rng.integers(-100, 100, (8, 8))
    src = ("kernel tile(a: uint8*, b: uint8*, c: int32*, d: int32*) {\n"
           "  tensor_mma(a, b, c, d, shape: m8n8k32, input_type: u4, output_type: i32);\n}\n")
    out = gpu_run(compile_ptx(src, detect_local_arch() or "sm_90a"), "tile", 1, 32,
                  [Buffer("a", "uint8", data=O.pack_lsb(a.ravel(), 4)),
                   Buffer("b", "uint8", data=O.pack_lsb(b.T.ravel(), 4)),
                   Buffer("c", "int32", data=c.ravel().astype(np.int32)),
                   Buffer("d", "int32", 72, poison=-1, output=True)])["d"]
    np.testing.assert_array_equal(out[:64].reshape(8, 8), O.mma_tile(a, b, c, integer=True))
    assert (out[64:] == -1).all()


def test_f64_tile_replays_on_portable(gpu_run):
    """f64 WMMA needs sm_80; compiled for the portable profile the whole tile replays."""
    rng = np.random.default_rng(13)
    a, b, c = (rng.standard_normal(s) for s in ((16, 8), (8, 24), (16, 24)))
    src = ("kernel tile(a: float64*, b: float64*, c: float64*, d: float64*) {\n"
           "  tensor_mma(a, b, c, d, shape: m16n24k8, input_type: f64, output_type: f64);\n}\n")
    ptx = compile_ptx(src, "portable")
    assert "wmma" not in ptx
    out = gpu_run(ptx, "tile", 1, 32,
                  [Buffer("a", "float64", data=a.ravel()),
                   Buffer("b", "float64", data=b.T.ravel()),       # column-major B
                   Buffer("c", "float64", data=c.ravel()),
                   Buffer("d", "float64", 16 * 24 + 8, poison=np.nan, output=True)])["d"]
    want = reference(a, b, c)
    scale = np.abs(a) @ np.abs(b) + np.abs(c)
    assert (np.abs(out[:384].reshape(16, 24) - want) <= 18 * UNIT["f64"] * scale).all()
    assert np.isnan(out[384:]).all()


def test_fp8_region_replays_on_portable(gpu_run):
    """E4M3 x E5M2 regions compiled for the portable profile (no FP8 mma.sync, no FP8
    conversion instruction): exact replay with the integer FP8 decoder, every finite code
    (subnormals included) in play, default layouts."""
    M, N, K, rm, rn = 45, 38, 67, 16, 8
    rng = np.random.default_rng(14)
    finite = {f: [c for c in range(256) if np.isfinite(O.decode(f, c))]
              for f in ("e4m3", "e5m2")}
    a = rng.choice(finite["e4m3"], (M, K)).astype(np.uint8)
    b = rng.choice(finite["e5m2"], (K, N)).astype(np.uint8)
    c = rng.standard_normal((M, N)).astype(np.float32)
    lda, ldb, ldc, ldd = K + 5, K + 3, N + 2, N + 6
    src = ("kernel gemm(a: uint8*, b: uint8*, c: float32*, d: float32*, m: uint32, n: uint32,\n"
           "            k: uint32, lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32) {\n"
           f"  tensor_matmul(a, b, c, d, block.y * {rm}, block.x * {rn}, m, n, k,\n"
           f"                shape: m{rm}n{rn}k32, a_type: e4m3, b_type: e5m2,\n"
           "                output_type: f32, lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);\n}\n")
    ptx = compile_ptx(src, "portable")
    assert "mma.sync" not in ptx and "e4m3x2" not in ptx
    bufs = [laid_out(a, "row", lda, 0x7F), laid_out(b, "col", ldb, 0x7F),
            laid_out(c, "row", ldc, np.nan), laid_out(np.zeros((M, N), np.float32), "row",
                                                      ldd, np.nan)]
    bufs[3][:] = np.nan
    out = gpu_run(ptx, "gemm", (-(-N // rn), -(-M // rm)), 32,
                  [Buffer(w, buf.dtype.name, data=buf, output=w == "d")
                   for w, buf in zip("abcd", bufs)] +
                  [Scalar("uint32", v) for v in (M, N, K, lda, ldb, ldc, ldd)])["d"]
    av, bv = O.decode_array("e4m3", a), O.decode_array("e5m2", b)
    want = reference(av, bv, c.astype(np.float64))
    got = O.logical(out, M, N, "row", ldd).astype(np.float64)
    scale = np.abs(av) @ np.abs(bv) + np.abs(c)
    assert (np.abs(got - want) <= 2 * (K + 1) * UNIT["f32"] * scale).all()
    r, cc = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index("row", ldd, r, cc)] = False
    assert np.isnan(out[untouched]).all()


LD64_EPILOGUE = """kernel ep(d: float32*, bias: float32*, ldbias: uint64) {
  tensor_epilogue(d, shape: m16n16, element_type: f32, bias_mode: matrix, bias: bias,
                  ldbias: ldbias, beta: 1.0);
}
"""


def _ld64_run(gpu_run, ldbias: int, checks: bool):
    import os
    import tempfile

    from toolchain.compiler.driver import Options, compile_file
    with tempfile.TemporaryDirectory(prefix="mettle-ld64-") as tmp:
        opts = Options(emit="ptx", gpu_arch=detect_local_arch() or "sm_90a", gpu_checks=checks)
        ptx = compile_file(os.path.join(tmp, "k.mettle"), opts,
                           source_text=LD64_EPILOGUE).data.decode()
    d = np.arange(256, dtype=np.float32)
    bias = laid_out(np.full((16, 16), 0.5, np.float32), "row", 20, np.nan)
    return gpu_run(ptx, "ep", 1, 32, [Buffer("d", "float32", data=d, output=True),
                                      Buffer("bias", "float32", data=bias),
                                      Scalar("uint64", ldbias)])["d"]


def test_uint64_leading_dimension_rule(gpu_run):
    """A 64-bit runtime leading dimension: in range it is used as is; above 2^32 - 1 the
    low 32 bits are used, and with --gpu-checks the kernel traps (docs/reference/language_rules.md)."""
    want = np.arange(256, dtype=np.float32) + 0.5
    np.testing.assert_array_equal(_ld64_run(gpu_run, 20, checks=True), want)
    np.testing.assert_array_equal(_ld64_run(gpu_run, (1 << 32) + 20, checks=False), want)
    with pytest.raises(AssertionError, match="failed"):
        _ld64_run(gpu_run, (1 << 32) + 20, checks=True)
