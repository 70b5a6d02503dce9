"""Shared cases of the FP8 and structured 2:4 tensor operations: each builder returns a
`Case` (Mettle source, launch, ordered arguments, and a checker against the CPU oracle)
that runs either on the CPU PTX interpreter (tests/tensor/ptx_sim.py) or on the GPU
(tests/gpu/test_tensor_fp8_sparse.py through harness.run_kernel).

Inputs are exactly representable and small (FP8 values v with 4v an integer and |v| <= 4,
f16/bf16 small integers), so every product and partial sum is exact in f32 whatever the
summation order, and results compare bit for bit. Every stored matrix has padded leading
dimensions with poisoned padding; D's padding must stay untouched.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tests.support import tensor_oracle as O

from .kernels import matmul_source, mma_source

POISON = {"float32": np.float32(-12345.0), "uint16": np.uint16(0x7E00),
          "uint8": np.uint8(0xAB)}
CARRIER = {"e4m3": "uint8", "e5m2": "uint8", "f16": "uint16", "bf16": "uint16",
           "f32": "float32", "mask": "uint8"}


@dataclass
class Case:
    source: str
    kernel: str
    grid: tuple[int, ...]
    block: int
    args: list = field(default_factory=list)   # ("buf", name, array, output) | ("u32", v)
    check: object = None                        # check(outputs: dict[str, ndarray])


def fp8_codes(rng, fmt: str, shape) -> np.ndarray:
    ok = [c for c in range(256) if not np.isnan(O.decode(fmt, c))
          and abs(O.decode(fmt, c)) <= 4 and (O.decode(fmt, c) * 4) % 1 == 0]
    return rng.choice(ok, size=shape).astype(np.uint8)


def encode(fmt: str, vals) -> np.ndarray:
    if fmt == "f16":
        return np.asarray(vals, np.float16).view(np.uint16)
    if fmt == "bf16":
        return O.to_bf16_bits(np.asarray(vals, np.float32))
    if fmt == "f32":
        return np.asarray(vals, np.float32)
    return np.asarray(vals).astype(np.uint8)           # FP8 codes and masks as given


def store(fmt: str, logical, layout: str, ld: int) -> np.ndarray:
    """A poisoned buffer holding the logical rows x cols matrix (codes/values)."""
    rows, cols = logical.shape
    dt = CARRIER[fmt]
    size = (rows - 1) * ld + cols if layout == "row" else (cols - 1) * ld + rows
    buf = np.full(size + 8, POISON[dt], dtype=dt)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    buf[O.index(layout, ld, r, c)] = encode(fmt, logical)
    return buf


def stored(fmt, logical, layout, transpose, pad):
    """(buffer, ld) of `logical` stored transposed or not in `layout` with padding."""
    mat = logical.T if transpose else logical
    ld = (mat.shape[1] if layout == "row" else mat.shape[0]) + pad
    return store(fmt, mat, layout, ld), ld


def check_d(out, want, layout, ld, poison_buf):
    m, n = want.shape
    got = O.logical(out, m, n, layout, ld).astype(np.float64)
    np.testing.assert_array_equal(got, want)
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index(layout, ld, r, c)] = False
    np.testing.assert_array_equal(out[untouched], poison_buf[untouched])


def _dims(shape: str) -> tuple[int, int, int]:
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


# ---------------------------------------------------------------- FP8
def fp8_tile(at, bt, shape, layouts=("row", "col", "row", "col"), transpose=(False, False),
             pad=8, seed=0, scope="subgroup") -> Case:
    m, n, k = _dims(shape)
    rng = np.random.default_rng(seed)
    a, b = fp8_codes(rng, at, (m, k)), fp8_codes(rng, bt, (k, n))
    c = rng.integers(-8, 8, (m, n)).astype(np.float64)
    abuf, lda = stored(at, a, layouts[0], transpose[0], pad)
    bbuf, ldb = stored(bt, b, layouts[1], transpose[1], pad)
    cbuf, ldc = stored("f32", c, layouts[2], False, pad)
    dbuf, ldd = stored("f32", np.zeros((m, n)), layouts[3], False, pad + 2)
    dbuf[:] = POISON["float32"]
    extra = f"scope: {scope}" if scope != "subgroup" else ""
    src = mma_source("tile", at, bt, "f32", "f32", shape, layouts=layouts, transpose=transpose,
                     lds={"lda": lda, "ldb": ldb, "ldc": ldc, "ldd": ldd}, runtime_ld=True,
                     extra=extra)
    want = O.decode_array(at, a) @ O.decode_array(bt, b) + c
    poison = dbuf.copy()
    return Case(src, "tile", (1,), 64 if scope == "workgroup" else 32,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, False), ("buf", "d", dbuf, True),
                 *(("u32", v) for v in (lda, ldb, ldc, ldd))],
                lambda out: check_d(out["d"], want, layouts[3], ldd, poison))


def _region_launch(shape, M, N, warps):
    m, n, _ = _dims(shape)
    return ((N + n * warps - 1) // (n * warps), (M + m - 1) // m)


def fp8_matmul(at, bt, shape, M, N, K, pad=8, warps=1, transpose=(False, False), block=None,
               seed=0) -> Case:
    rng = np.random.default_rng(seed)
    lay = ("row", "col", "row", "col")
    a, b = fp8_codes(rng, at, (M, K)), fp8_codes(rng, bt, (K, N))
    c = rng.integers(-8, 8, (M, N)).astype(np.float64)
    abuf, lda = stored(at, a, lay[0], transpose[0], pad)
    bbuf, ldb = stored(bt, b, lay[1], transpose[1], pad)
    cbuf, ldc = stored("f32", c, lay[2], False, pad)
    dbuf, ldd = stored("f32", np.zeros((M, N)), lay[3], False, pad)
    dbuf[:] = POISON["float32"]
    src = matmul_source("mm", at, bt, "f32", "f32", shape, layouts=lay, transpose=transpose,
                        warps=warps)
    want = O.decode_array(at, a) @ O.decode_array(bt, b) + c
    poison = dbuf.copy()
    return Case(src, "mm", _region_launch(shape, M, N, warps), block or 32 * warps,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, False), ("buf", "d", dbuf, True),
                 *(("u32", v) for v in (M, N, K, lda, ldb, ldc, ldd))],
                lambda out: check_d(out["d"], want, lay[3], ldd, poison))


# ---------------------------------------------------------------- structured 2:4
INVALID_MASKS = (0b0000, 0b0001, 0b0111, 0b1111, 0b1000, 0xF0)


def sparse_operands(rng, t, M, K, invalid: bool):
    """(compressed A values M x 2*groups, masks M x groups, logical dense A) with values
    at logical positions >= K poisoned (they must not contribute)."""
    groups = (K + 3) // 4
    vals = rng.integers(-3, 4, (M, 2 * groups)).astype(np.float64)
    _, masks = O.compress_2_4(np.zeros((M, 4 * groups)), rng=rng)
    if invalid:
        pick = rng.random(masks.shape) < 0.25
        masks[pick] = rng.choice(INVALID_MASKS, size=int(pick.sum()))
        masks[0, 0] = 0b0111
    masks = masks.astype(np.uint8)
    dense = O.decompress_2_4(vals, masks, K)
    return vals, masks, dense


def sparse_tile(t, shape, layouts=("row", "col", "row", "row"), transpose=(False, False),
                pad=8, seed=0, invalid=False) -> Case:
    m, n, k = _dims(shape)
    rng = np.random.default_rng(seed)
    vals, masks, dense = sparse_operands(rng, t, m, k, invalid)
    b = rng.integers(-3, 4, (k, n)).astype(np.float64)
    c = rng.integers(-8, 8, (m, n)).astype(np.float64)
    abuf, lda = stored(t, vals, layouts[0], transpose[0], pad)
    bbuf, ldb = stored(t, b, layouts[1], transpose[1], pad)
    cbuf, ldc = stored("f32", c, layouts[2], False, pad)
    dbuf, ldd = stored("f32", np.zeros((m, n)), layouts[3], False, pad)
    dbuf[:] = POISON["float32"]
    src = mma_source("tile", t, t, "f32", "f32", shape, layouts=layouts, transpose=transpose,
                     lds={"lda": lda, "ldb": ldb, "ldc": ldc, "ldd": ldd}, runtime_ld=True,
                     extra="sparsity: structured_2_to_4, metadata: meta",
                     more_params=("meta: uint8*",))
    want = dense @ b + c
    poison = dbuf.copy()
    return Case(src, "tile", (1,), 32,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, False), ("buf", "d", dbuf, True),
                 ("buf", "meta", masks.ravel().copy(), False),
                 *(("u32", v) for v in (lda, ldb, ldc, ldd))],
                lambda out: check_d(out["d"], want, layouts[3], ldd, poison))


def sparse_matmul(t, shape, M, N, K, pad=8, warps=1, transpose=(False, False), block=None,
                  seed=0, invalid=False) -> Case:
    rng = np.random.default_rng(seed)
    lay = ("row", "col", "row", "col")
    vals, masks, dense = sparse_operands(rng, t, M, K, invalid)
    b = rng.integers(-3, 4, (K, N)).astype(np.float64)
    c = rng.integers(-8, 8, (M, N)).astype(np.float64)
    abuf, lda = stored(t, vals, lay[0], transpose[0], pad)
    bbuf, ldb = stored(t, b, lay[1], transpose[1], pad)
    cbuf, ldc = stored("f32", c, lay[2], False, pad)
    dbuf, ldd = stored("f32", np.zeros((M, N)), lay[3], False, pad)
    dbuf[:] = POISON["float32"]
    src = matmul_source("mm", t, t, "f32", "f32", shape, layouts=lay, transpose=transpose,
                        warps=warps, extra="sparsity: structured_2_to_4, metadata: meta",
                        more_params=("meta: uint8*",))
    want = dense @ b + c
    poison = dbuf.copy()
    return Case(src, "mm", _region_launch(shape, M, N, warps), block or 32 * warps,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, False), ("buf", "d", dbuf, True),
                 *(("u32", v) for v in (M, N, K, lda, ldb, ldc, ldd)),
                 ("buf", "meta", masks.ravel().copy(), False)],
                lambda out: check_d(out["d"], want, lay[3], ldd, poison))


# ---------------------------------------------------------------- block-scaled (sm_121a)
SCALE_CODES = {"ue8m0": [126, 127, 128, 129], "ue4m3": [0x30, 0x38, 0x3C, 0x40]}


def small_codes(rng, fmt: str, shape) -> np.ndarray:
    """Codes of `fmt` whose values v have 4v integral and |v| <= 4 (exact products)."""
    ok = [c for c in range(1 << O.BITS[fmt]) if not np.isnan(O.decode(fmt, c))
          and abs(O.decode(fmt, c)) <= 4 and (O.decode(fmt, c) * 4) % 1 == 0]
    return rng.choice(ok, size=shape).astype(np.int64)


def dense_stream(rng, fmt: str, codes, layout: str, transpose: bool, pad: int):
    """(LSB-first packed stream, logical ld) holding `codes`, random codes in padding."""
    mat = codes.T if transpose else codes
    rows, cols = mat.shape
    ld = (cols if layout == "row" else rows) + pad
    size = (rows - 1) * ld + cols if layout == "row" else (cols - 1) * ld + rows
    flat = rng.integers(0, 1 << O.BITS[fmt], size + 5)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    flat[O.index(layout, ld, r, c)] = mat
    return O.pack_lsb(flat, O.BITS[fmt]), ld


def scaled_tile(at, bt, shape, mode, stype, layouts=("row", "col", "row", "row"),
                transpose=(False, False), pad=5, seed=0) -> Case:
    m, n, k = _dims(shape)
    block = 16 if mode == "block16" else 32
    groups = -(-k // block)
    rng = np.random.default_rng(seed)
    a, b = small_codes(rng, at, (m, k)), small_codes(rng, bt, (k, n))
    c = rng.integers(-8, 8, (m, n)).astype(np.float64)
    sa = rng.choice(SCALE_CODES[stype], (m, groups)).astype(np.uint8)
    sb = rng.choice(SCALE_CODES[stype], (groups, n)).astype(np.uint8)
    abuf, lda = dense_stream(rng, at, a, layouts[0], transpose[0], pad)
    bbuf, ldb = dense_stream(rng, bt, b, layouts[1], transpose[1], pad)
    cbuf, ldc = stored("f32", c, layouts[2], False, pad)
    dbuf, ldd = stored("f32", np.zeros((m, n)), layouts[3], False, pad)
    dbuf[:] = POISON["float32"]
    ldsa, ldsb = groups + 3, groups + 2
    sabuf = store("mask", sa, "row", ldsa)
    sbbuf = store("mask", sb, "col", ldsb)
    src = mma_source("tile", at, bt, "f32", "f32", shape, layouts=layouts, transpose=transpose,
                     lds={"lda": lda, "ldb": ldb, "ldc": ldc, "ldd": ldd, "ldsa": ldsa,
                          "ldsb": ldsb}, runtime_ld=True,
                     extra=f"a_scale_mode: {mode}, b_scale_mode: {mode}, a_scale_type: "
                     f"{stype}, b_scale_type: {stype}, a_scale: sa, b_scale: sb",
                     more_params=("sa: uint8*", "sb: uint8*"))
    want = O.scaled_matmul(O.decode_array(at, a), O.decode_array(bt, b), c,
                           O.decode_array(stype, sa), O.decode_array(stype, sb), block)
    poison = dbuf.copy()
    return Case(src, "tile", (1,), 32,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, False), ("buf", "d", dbuf, True),
                 ("buf", "sa", sabuf, False), ("buf", "sb", sbbuf, False),
                 *(("u32", v) for v in (lda, ldb, ldc, ldd, ldsa, ldsb))],
                lambda out: check_d(out["d"], want, layouts[3], ldd, poison))


def scaled_matmul(at, bt, shape, mode, stype, M, N, K, transpose=(False, False),
                  layouts=("row", "col", "row", "col"), pad=5, warps=1, block=None,
                  seed=0, packed_scales=False) -> Case:
    """A block-scaled tensor_matmul over an M x N x K problem (one region per warp), with
    poisoned stream/scale/D padding. `packed_scales` passes the packed scale strides
    (ldsa = ldsb = ceil(K/block)) instead of padded ones; both are explicit (gpu.md)."""
    blk = 16 if mode == "block16" else 32
    groups = -(-K // blk)
    rng = np.random.default_rng(seed)
    a, b = small_codes(rng, at, (M, K)), small_codes(rng, bt, (K, N))
    c = rng.integers(-8, 8, (M, N)).astype(np.float64)
    sa = rng.choice(SCALE_CODES[stype], (M, groups)).astype(np.uint8)
    sb = rng.choice(SCALE_CODES[stype], (groups, N)).astype(np.uint8)
    abuf, lda = dense_stream(rng, at, a, layouts[0], transpose[0], pad) if K else \
        (np.zeros(8, np.uint8), 1 + pad)
    bbuf, ldb = dense_stream(rng, bt, b, layouts[1], transpose[1], pad) if K else \
        (np.zeros(8, np.uint8), 1 + pad)
    cbuf, ldc = stored("f32", c, layouts[2], False, pad)
    dbuf, ldd = stored("f32", np.zeros((M, N)), layouts[3], False, pad + 1)
    dbuf[:] = POISON["float32"]
    ldsa, ldsb = (groups, groups) if packed_scales else (groups + 3, groups + 2)
    sabuf = store("mask", sa, "row", ldsa) if groups else np.zeros(8, np.uint8)
    sbbuf = store("mask", sb, "col", ldsb) if groups else np.zeros(8, np.uint8)
    opts = (f"a_scale_mode: {mode}, b_scale_mode: {mode}, a_scale_type: {stype}, "
            f"b_scale_type: {stype}, a_scale: sa, b_scale: sb")
    opts += ", ldsa: ldsa, ldsb: ldsb"
    params = ("sa: uint8*", "sb: uint8*", "ldsa: uint32", "ldsb: uint32")
    src = matmul_source("mm", at, bt, "f32", "f32", shape, layouts=layouts,
                        transpose=transpose, warps=warps, extra=opts, more_params=params)
    want = O.scaled_matmul(O.decode_array(at, a), O.decode_array(bt, b), c,
                           O.decode_array(stype, sa), O.decode_array(stype, sb), blk)
    poison = dbuf.copy()
    scalars = (M, N, K, lda, ldb, ldc, ldd)
    return Case(src, "mm", _region_launch(shape, M, N, warps), block or 32 * warps,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, False), ("buf", "d", dbuf, True),
                 *(("u32", v) for v in scalars),
                 ("buf", "sa", sabuf, False), ("buf", "sb", sbbuf, False),
                 ("u32", max(ldsa, 1)), ("u32", max(ldsb, 1))],
                lambda out: check_d(out["d"], want, layouts[3], ldd, poison))
