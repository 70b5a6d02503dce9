"""Hardware suite for the cooperative tensor operations (issue 7), H200 (sm_90a).

Every case compiles Mettle source with our PTX backend for the local GPU and runs in its
own process (harness.run_kernel), with padded strides and poisoned padding, against the
CPU oracle (tests/support/tensor_oracle.py). Inputs are small integers so float results
are exact whatever the summation order, and results compare bit for bit. Families the
H200 cannot run (block-scaled FP8/FP6/FP4, sm_120a/121a) are not implemented yet and have
no case here.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.support import tensor_oracle as O
from tests.tensor.kernels import (carrier, compile_ptx, epilogue_source, matmul_source,
                                  mma_source)
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

POISON = {"float32": np.float32(-12345.0), "float64": -12345.0, "int32": -12345,
          "uint16": 0x7E00, "uint8": 0xAB, "int8": -77}


@cache
def arch() -> str:
    return detect_local_arch() or "sm_90a"


def store(fmt: str, logical_vals, rows, cols, layout, ld):
    """Storage buffer (carrier dtype) holding logical values, padding poisoned."""
    dt = carrier(fmt)
    size = (rows - 1) * ld + cols if layout == "row" else (cols - 1) * ld + rows
    buf = np.full(size + 8, POISON[dt], dtype=dt)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    buf[O.index(layout, ld, r, c)] = encode(fmt, logical_vals)
    return buf


def encode(fmt: str, v):
    if fmt == "f16":
        return np.asarray(v, np.float16).view(np.uint16)
    if fmt == "bf16":
        return O.to_bf16_bits(np.asarray(v, np.float32))
    return np.asarray(v).astype(carrier(fmt))


def small(rng, fmt, shape):
    lo, hi = {"u8": (0, 6), "i8": (-5, 6)}.get(fmt, (-3, 4))
    return rng.integers(lo, hi, size=shape).astype(np.float64 if fmt[0] in "fbt" else
                                                    np.int64)


LD_PAD = {"f16": 8, "bf16": 8, "f32": 4, "tf32": 4, "f64": 2, "i8": 16, "u8": 16,
          "i32": 4}


# ---------------------------------------------------------------- whole-tile WMMA
TILES = [("f16", "f32", "m16n16k16"), ("f16", "f16", "m32n32k32"), ("f16", "f32", "m8n32k16"),
         ("bf16", "f32", "m32n8k16"), ("bf16", "f32", "m48n32k32"),
         ("tf32", "f32", "m16n16k8"), ("tf32", "f32", "m32n16k16"),
         ("f64", "f64", "m8n8k4"), ("f64", "f64", "m16n24k8"),
         ("i8", "i32", "m16n16k16"), ("u8", "i32", "m32n32k32")]


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("fmt,acc,shape", TILES)
def test_wmma_tile_against_oracle(gpu_run, fmt, acc, shape, transpose):
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    rng = np.random.default_rng(hash((fmt, shape, transpose)) % 2**32)
    a, b, c = small(rng, fmt, (m, k)), small(rng, fmt, (k, n)), small(rng, acc, (m, n))
    lay = ("row", "col", "col", "row")
    pad = LD_PAD[fmt]
    # stored shapes: with transpose A is stored K x M (col layout of it == A row-major)
    sa = (k, m) if transpose else (m, k)
    sb = (n, k) if transpose else (k, n)
    lda = (sa[1] if lay[0] == "row" else sa[0]) + pad
    ldb = (sb[1] if lay[1] == "row" else sb[0]) + pad
    ldc, ldd = m + LD_PAD[acc], n + LD_PAD[acc]
    abuf = store(fmt, a.T if transpose else a, *sa, lay[0], lda)
    bbuf = store(fmt, b.T if transpose else b, *sb, lay[1], ldb)
    cbuf = store(acc, c, m, n, "col", ldc)
    dbuf = np.full((m - 1) * ldd + n + 8, POISON[carrier(acc)], dtype=carrier(acc))
    src = mma_source("tile", fmt, fmt, acc, acc, shape, layouts=lay,
                     transpose=(transpose, transpose),
                     lds={"lda": lda, "ldb": ldb, "ldc": ldc, "ldd": ldd}, runtime_ld=True)
    out = gpu_run(compile_ptx(src, arch()), "tile", 1, 32,
                  [Buffer("a", carrier(fmt), data=abuf), Buffer("b", carrier(fmt), data=bbuf),
                   Buffer("c", carrier(acc), data=cbuf),
                   Buffer("d", carrier(acc), data=dbuf, output=True),
                   *(Scalar("uint32", v) for v in (lda, ldb, ldc, ldd))])["d"]
    want = O.mma_tile(a, b, c, integer=acc == "i32")
    got = O.values(acc, O.logical(out, m, n, "row", ldd))
    np.testing.assert_array_equal(got, want)
    r, cc = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index("row", ldd, r, cc)] = False
    assert (out[untouched] == POISON[carrier(acc)]).all()


@pytest.mark.parametrize("fmt", ["i4", "u4"])
def test_subbyte_wmma_tile(gpu_run, fmt):
    rng = np.random.default_rng(4)
    lo, hi = (-8, 8) if fmt == "i4" else (0, 16)
    a, b = rng.integers(lo, hi, (8, 32)), rng.integers(lo, hi, (32, 8))
    c = rng.integers(-100, 100, (8, 8))
    lda = ldb = 64                                     # logical elements, padded rows
    a_codes = rng.integers(0, 16, 8 * lda)             # padding nibbles are random
    b_codes = rng.integers(0, 16, 8 * ldb)
    for r in range(8):
        a_codes[r * lda:r * lda + 32] = a[r] & 15
        b_codes[r * ldb:r * ldb + 32] = b[:, r] & 15     # B column-major
    src = mma_source("tile", fmt, fmt, "i32", "i32", "m8n8k32",
                     layouts=("row", "col", "row", "row"),
                     lds={"lda": lda, "ldb": ldb, "ldc": 8, "ldd": 8})
    out = gpu_run(compile_ptx(src, arch()), "tile", 1, 32,
                  [Buffer("a", "uint8", data=O.pack_lsb(a_codes, 4)),
                   Buffer("b", "uint8", data=O.pack_lsb(b_codes, 4)),
                   Buffer("c", "int32", data=c.ravel().astype(np.int32)),
                   Buffer("d", "int32", 72, poison=-1, output=True)])["d"]
    np.testing.assert_array_equal(out[:64].reshape(8, 8), O.mma_tile(a, b, c, integer=True))
    assert (out[64:] == -1).all()


@pytest.mark.parametrize("math", ["xor_popcount", "and_popcount"])
def test_b1_popcount_tile(gpu_run, math):
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 2, (8, 128)), rng.integers(0, 2, (128, 8))
    c = rng.integers(-50, 50, (8, 8))
    src = mma_source("tile", "b1", "b1", "i32", "i32", "m8n8k128",
                     layouts=("row", "col", "row", "row"), extra=f"math: {math}")
    out = gpu_run(compile_ptx(src, arch()), "tile", 1, 32,
                  [Buffer("a", "uint8", data=O.pack_lsb(a.ravel(), 1)),
                   Buffer("b", "uint8", data=O.pack_lsb(b.T.ravel(), 1)),
                   Buffer("c", "int32", data=c.ravel().astype(np.int32)),
                   Buffer("d", "int32", 64, output=True)])["d"]
    op = np.bitwise_xor if math == "xor_popcount" else np.bitwise_and
    want = c + np.array([[op(a[i], b[:, j]).sum() for j in range(8)] for i in range(8)])
    np.testing.assert_array_equal(out.reshape(8, 8), want)


# ---------------------------------------------------------------- tensor_matmul regions
def run_matmul(gpu_run, fmt, acc, shape, M, N, K, pad, warps=1, block=None,
               transpose=(False, False), seed=0):
    m, n = (int(x) for x in shape[1:].split("k")[0].split("n"))
    rng = np.random.default_rng(seed)
    a, b, c = small(rng, fmt, (M, K)), small(rng, fmt, (K, N)), small(rng, acc, (M, N))
    lay = ("row", "col", "row", "col")
    sa = (K, M) if transpose[0] else (M, K)
    sb = (N, K) if transpose[1] else (K, N)
    lda = (sa[1] if lay[0] == "row" else sa[0]) + pad
    ldb = (sb[1] if lay[1] == "row" else sb[0]) + pad
    ldc, ldd = N + pad, M + pad
    bufs = {"a": store(fmt, a.T if transpose[0] else a, *sa, lay[0], max(lda, 1)),
            "b": store(fmt, b.T if transpose[1] else b, *sb, lay[1], max(ldb, 1)),
            "c": store(acc, c, M, N, "row", ldc),
            "d": np.full((N - 1) * ldd + M + 8, POISON[carrier(acc)], carrier(acc))}
    src = matmul_source("mm", fmt, fmt, acc, acc, shape, layouts=lay, transpose=transpose,
                        warps=warps)
    grid = ((N + n * warps - 1) // (n * warps), (M + m - 1) // m)
    out = gpu_run(compile_ptx(src, arch()), "mm", grid, block or 32 * warps,
                  [Buffer("a", carrier(fmt), data=bufs["a"]),
                   Buffer("b", carrier(fmt), data=bufs["b"]),
                   Buffer("c", carrier(acc), data=bufs["c"]),
                   Buffer("d", carrier(acc), data=bufs["d"], output=True),
                   *(Scalar("uint32", v) for v in (M, N, K, lda, ldb, ldc, ldd))])["d"]
    want = O.mma_tile(a, b, c, integer=acc == "i32")
    np.testing.assert_array_equal(O.values(acc, O.logical(out, M, N, "col", ldd)), want)
    r, cc = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index("col", ldd, r, cc)] = False
    assert (out[untouched] == POISON[carrier(acc)]).all()


FAMS = [("f16", "f32"), ("bf16", "f32"), ("f64", "f64"), ("i8", "i32"), ("u8", "i32")]


@pytest.mark.parametrize("fmt,acc", FAMS)
def test_matmul_19x23x21_tails_padded(gpu_run, fmt, acc):
    shape = "m8n8k4" if fmt == "f64" else "m16n16k16"
    run_matmul(gpu_run, fmt, acc, shape, 19, 23, 21, LD_PAD[fmt])


@pytest.mark.parametrize("fmt,acc", FAMS)
def test_matmul_interior_with_grid_tiles_and_transpose(gpu_run, fmt, acc):
    shape = "m16n24k4" if fmt == "f64" else "m32n32k16"
    run_matmul(gpu_run, fmt, acc, shape, 70, 75, 53, LD_PAD[fmt], warps=2,
               transpose=(True, True))


@pytest.mark.parametrize("K", [0, 7, 16])
def test_matmul_k_zero_small_k_and_partial_warp(gpu_run, K):
    run_matmul(gpu_run, "f16", "f32", "m16n16k16", 33, 17, K, 8)
    run_matmul(gpu_run, "f16", "f32", "m16n16k16", 32, 32, 32, 8, block=20)


def test_matmul_misaligned_strides_replay(gpu_run):
    run_matmul(gpu_run, "f16", "f32", "m16n16k16", 40, 40, 40, 3)


@pytest.mark.parametrize("fmt,acc", [("f16", "f32"), ("bf16", "f32")])
def test_matmul_whole_1024_cubed(gpu_run, fmt, acc):
    run_matmul(gpu_run, fmt, acc, "m64n64k16", 1024, 1024, 1024, 8, warps=4)


# ---------------------------------------------------------------- tensor_epilogue
@pytest.mark.parametrize("scope", ["subgroup", "workgroup"])
@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("mode,act,layout", [("none", "relu", "row"),
                                             ("row", "clamp", "col"),
                                             ("column", "identity", "row"),
                                             ("matrix", "relu", "col")])
def test_epilogue_against_exact_oracle(gpu_run, fmt, mode, act, layout, scope):
    m, n, ld, ldb = 20, 12, 24, 28
    rng = np.random.default_rng(7)
    d = rng.standard_normal((m, n)) * 4
    d[0, :4] = [-0.0, np.nan, -1.0, 0.0]
    ct = np.float64 if fmt == "f64" else np.float32
    stored_d = store(fmt, d, m, n, layout, ld)
    d_vals = O.values(fmt, O.logical(stored_d, m, n, layout, ld))
    bias_shape = {"row": (m,), "column": (n,), "matrix": (m, n), "none": None}[mode]
    args = [Buffer("d", carrier(fmt), data=stored_d, output=True)]
    bias_vals = None
    if bias_shape:
        bias = rng.standard_normal(bias_shape)
        bias.ravel()[0] = np.nan
        if mode == "matrix":
            bbuf = store(fmt, bias, m, n, "row", ldb)
            bias_vals = O.values(fmt, O.logical(bbuf, m, n, "row", ldb))
        else:
            bbuf = encode(fmt, bias)
            bv = O.values(fmt, bbuf)
            bias_vals = bv[:, None] if mode == "row" else bv[None, :]
        args.append(Buffer("bias", carrier(fmt), data=bbuf))
    alpha, beta, lo, hi = 1.5, -0.75, -1.25, 2.5
    ctype = "float64" if fmt == "f64" else "float32"
    args.append(Scalar(ctype, alpha))
    if bias_shape:
        args.append(Scalar(ctype, beta))
    if act == "clamp":
        args += [Scalar(ctype, lo), Scalar(ctype, hi)]
    args += [Scalar("uint32", ld)] + ([Scalar("uint32", ldb)] if mode == "matrix" else [])
    src = epilogue_source("ep", fmt, f"m{m}n{n}", layout=layout, bias_mode=mode,
                          bias_layout="row", activation=act, ld=ld, ldbias=ldb,
                          runtime_ld=True, scope=scope)
    block = 96 if scope == "workgroup" else 32
    out = gpu_run(compile_ptx(src, arch()), "ep", 1, block, args)["d"]
    want = O.epilogue(np.broadcast_to(d_vals, (m, n)), fmt,
                      None if bias_vals is None else np.broadcast_to(bias_vals, (m, n)),
                      alpha, beta, act, lo, hi)
    got = O.logical(out, m, n, layout, ld)
    want_bits = encode(fmt, want.astype(ct)) if fmt in ("f16", "bf16") else want
    got_v, want_v = O.values(fmt, got), O.values(fmt, want_bits)
    np.testing.assert_array_equal(np.isnan(got_v), np.isnan(want_v))
    ok = ~np.isnan(want_v)
    np.testing.assert_array_equal(got_v[ok], want_v[ok])
    np.testing.assert_array_equal(np.signbit(got_v[ok]), np.signbit(want_v[ok]))
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index(layout, ld, r, c)] = False
    np.testing.assert_array_equal(out[untouched], stored_d[untouched])
