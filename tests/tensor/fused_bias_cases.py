"""Shared cases of fused epilogues with a bias on the direct m16n8 (mma.sync) families: an
exactly compatible group of MMAs (a runtime K loop, a straight-line chain, or an explicit
3-stage async-copy pipeline) followed by `tensor_epilogue` on the same 32x16 f32 tile
(2 x 2 m16n8 subtiles, so both groupID halves and both n8 blocks are exercised).

Each builder returns a narrow_cases.Case that runs on the CPU PTX interpreter
(tests/tensor/test_fused_bias.py) or on the GPU (tests/gpu/test_fused_bias.py). Inputs are
exactly representable (FP8/FP4/FP6 values v with 4v integral, small f16 integers), so the
MMA part is exact in f32 whatever the summation order; alpha, beta and the bias are random
non-zero f32 values, and the oracle (tensor_oracle.epilogue) rounds each step in float32
exactly as gpu.md orders it, so every comparison is bit for bit. C (= D) and a matrix bias
have padded leading dimensions, and D's padding is poisoned and must stay untouched.
"""
from __future__ import annotations

import numpy as np

from tests.support import tensor_oracle as O

from .narrow_cases import POISON, Case, fp8_codes, small_codes, sparse_operands, store

M, N = 32, 16
CHUNK = {"fp8": 32, "sparse": 16, "scaled": 32}
TYPES = {"fp8": ("e4m3", "e5m2"), "sparse": ("f16", "f16"), "scaled": ("e4m3", "e5m2")}
CARRIER = {"fp8": "uint8", "sparse": "uint16", "scaled": "uint8"}
BIAS_MODES = ("row", "column", "matrix")


def _mma(family: str, kk: str, c_layout: str, a: str = "a", b: str = "b") -> str:
    """One tensor_mma of chunk `kk` (a Mettle expression) into the tile at c."""
    k = CHUNK[family]
    at, bt = TYPES[family]
    a_cols = k // 2 if family == "sparse" else k
    extra = ""
    if family == "sparse":
        extra = (f",\n               sparsity: structured_2_to_4, "
                 f"metadata: meta + (int64)({kk} * {M * k // 4})")
    elif family == "scaled":
        extra = (",\n               a_scale_mode: block32, b_scale_mode: block32, "
                 "a_scale_type: ue8m0, b_scale_type: ue8m0,\n"
                 f"               a_scale: sa + (int64)({kk}), b_scale: sb + (int64)({kk}), "
                 "ldsa: ldsa, ldsb: ldsb")
    return (f"tensor_mma({a} + (int64)({kk} * {a_cols}), {b} + (int64)({kk} * {k}), c, c, "
            f"shape: m{M}n{N}k{k},\n"
            f"               a_type: {at}, b_type: {bt}, accumulator_type: f32, "
            "result_type: f32,\n"
            f"               a_layout: row, b_layout: col, c_layout: {c_layout}, "
            f"d_layout: {c_layout},\n"
            f"               lda: lda, ldb: ldb, ldc: ldc, ldd: ldc{extra});")


def _epilogue(bias_mode: str, layout: str, bias_layout: str, ldbias, activation: str,
              alpha: bool, beta: bool) -> str:
    opts = [f"m: {M}, n: {N}, element_type: f32, layout: {layout}, ldd: ldc"]
    if bias_mode != "none":
        opts.append(f"bias: bias, bias_mode: {bias_mode}")
        if bias_mode == "matrix":
            opts.append(f"bias_layout: {bias_layout}, ldbias: {ldbias}")
    if alpha:
        opts.append("alpha: alpha")
    if beta and bias_mode != "none":
        opts.append("beta: beta")
    opts.append(f"activation: {activation}")
    if activation == "clamp":
        opts.append("clamp_min: lo, clamp_max: hi")
    return "  tensor_epilogue(c, " + ",\n                  ".join(opts) + ");\n"


def _params(family: str) -> str:
    ab = CARRIER[family]
    extra = {"fp8": "", "sparse": ", meta: uint8*",
             "scaled": ", sa: uint8*, sb: uint8*, ldsa: uint32, ldsb: uint32"}[family]
    return (f"a: {ab}*, b: {ab}*, c: float32*, bias: float32*, kt: int32, lda: uint32, "
            f"ldb: uint32, ldc: uint32, ldbias: uint32, alpha: float32, beta: float32, "
            f"lo: float32, hi: float32{extra}")


def _pipeline_body(family: str, stages: int, c_layout: str) -> str:
    """Stage s's A and B chunks are copied into workgroup memory up front (16 bytes per
    copy, one commit group per stage); then stage s waits for its group, publishes it with
    an acq_rel barrier and multiplies. The staged A/B tiles are packed (lda = K, ldb = K)."""
    k = CHUNK[family]
    a_bytes, b_bytes = M * k, k * N                 # FP8: one byte per element
    lines = [f"  workgroup var sa_: uint8[{a_bytes * stages}];",
             f"  workgroup var sb_: uint8[{b_bytes * stages}];",
             "  var t: int32 = (int32)thread.x;"]
    for s in range(stages):
        for name, size in (("a", a_bytes), ("b", b_bytes)):
            for part in range(0, size, 32 * 16):
                lines.append(f"  async_copy_workgroup(&s{name}_[{size * s + part} + t * 16], "
                             f"&{name}[{size * s + part} + t * 16], 16, transaction: 16);")
        lines.append("  async_copy_commit();")
    for s in range(stages):
        lines += [f"  async_copy_wait({stages - 1 - s});",
                  "  barrier(workgroup, acq_rel);",
                  "  " + _mma(family, "0", c_layout, f"&sa_[{a_bytes * s}]",
                              f"&sb_[{b_bytes * s}]").replace("lda: lda, ldb: ldb",
                                                             f"lda: {k}, ldb: {k}")]
    return "\n".join(lines) + "\n"


def source(family: str, form: str, bias_mode: str, layout: str = "row",
           bias_layout: str = "row", ldbias="ldbias", activation: str = "relu",
           alpha: bool = True, beta: bool = True) -> str:
    """Kernel `fb`: the group (`loop`: kt chunks; `chain`: 3 chunks; `pipeline`: 3 staged
    chunks, FP8 only) then the epilogue. `ldbias` is `ldbias` (runtime) or an int."""
    head = f"kernel(block = 32) fb({_params(family)}) {{\n"
    if form == "loop":
        body = f"  for kk in 0..kt {{\n    {_mma(family, 'kk', layout)}\n  }}\n"
    elif form == "chain":
        body = "".join(f"  {_mma(family, str(i), layout)}\n" for i in range(3))
    else:
        body = _pipeline_body(family, 3, layout)
    return head + body + _epilogue(bias_mode, layout, bias_layout, ldbias, activation,
                                   alpha, beta) + "}\n"


def _padded(logical, layout: str, pad: int, fmt: str = "f32"):
    rows, cols = logical.shape
    ld = (cols if layout == "row" else rows) + pad
    return store(fmt, logical, layout, ld), ld


def case(family: str, form: str, bias_mode: str, layout: str = "row",
         bias_layout: str = "row", runtime_ldbias: bool = True, activation: str = "relu",
         alpha: bool = True, beta: bool = True, seed: int = 0) -> Case:
    chunks = 3 if form in ("chain", "pipeline") else 2 + seed % 2
    k = CHUNK[family] * chunks
    rng = np.random.default_rng(1000 + seed)
    at, bt = TYPES[family]
    c = rng.integers(-8, 8, (M, N)).astype(np.float64)
    c[c == 0] = 5
    cbuf, ldc = _padded(c, layout, 5)
    args_extra = []
    if family == "fp8":
        a, b = fp8_codes(rng, at, (M, k)), fp8_codes(rng, bt, (k, N))
        prod = O.decode_array(at, a) @ O.decode_array(bt, b)
        if form == "pipeline":          # stage s's tiles packed one after the other
            abuf = np.concatenate([a[:, CHUNK[family] * s:CHUNK[family] * (s + 1)].ravel()
                                   for s in range(chunks)]).astype(np.uint8)
            bbuf = np.concatenate([b[CHUNK[family] * s:CHUNK[family] * (s + 1), :].T.ravel()
                                   for s in range(chunks)]).astype(np.uint8)
            lda = ldb = CHUNK[family]
        else:
            abuf, lda = _padded(a, "row", 4, "e4m3")
            bbuf, ldb = _padded(b, "col", 3, "e4m3")
    elif family == "sparse":
        vals, masks, dense = sparse_operands(rng, at, M, k, invalid=False)
        b = rng.integers(-3, 4, (k, N)).astype(np.float64)
        b[b == 0] = 1
        prod = dense @ b
        abuf, lda = _padded(vals, "row", 4, "f16")
        bbuf, ldb = _padded(b, "col", 3, "f16")
        per = CHUNK[family] // 4        # each chunk's [M, 4] masks packed row-major
        meta = np.concatenate([masks[:, per * i:per * (i + 1)].ravel()
                               for i in range(chunks)]).astype(np.uint8)
        args_extra = [("buf", "meta", meta, False)]
    else:
        a, b = small_codes(rng, at, (M, k)), small_codes(rng, bt, (k, N))
        sa = rng.choice([126, 127, 128, 129], (M, chunks)).astype(np.uint8)
        sb = rng.choice([126, 127, 128, 129], (chunks, N)).astype(np.uint8)
        prod = O.scaled_matmul(O.decode_array(at, a), O.decode_array(bt, b), 0 * c,
                               O.decode_array("ue8m0", sa), O.decode_array("ue8m0", sb), 32)
        abuf, lda = _padded(a, "row", 4, "e4m3")
        bbuf, ldb = _padded(b, "col", 3, "e4m3")
        ldsa, ldsb = chunks + 3, chunks + 2
        args_extra = [("buf", "sa", store("mask", sa, "row", ldsa), False),
                      ("buf", "sb", store("mask", sb, "col", ldsb), False),
                      ("u32", ldsa), ("u32", ldsb)]
    d = prod + c                                      # exact in f32
    bias_logical, bias_buf, ldbias = None, np.zeros(4, np.float32), 1
    if bias_mode != "none":
        size = {"row": M, "column": N, "matrix": M * N}[bias_mode]
        vals = rng.standard_normal(size).astype(np.float32)
        vals[vals == 0] = 0.25
        if bias_mode == "matrix":
            bias_logical = vals.reshape(M, N)
            bias_buf, ldbias = _padded(bias_logical, bias_layout, 3)
        else:
            bias_buf = np.concatenate([vals, np.full(3, POISON["float32"], np.float32)])
            bias_logical = np.broadcast_to(vals[:, None] if bias_mode == "row" else
                                           vals[None, :], (M, N))
    al = np.float32(rng.uniform(0.3, 1.7)) if alpha else None
    be = np.float32(-rng.uniform(0.3, 1.7)) if beta and bias_mode != "none" else None
    lo, hi = np.float32(-3.5), np.float32(4.25)
    want = O.epilogue(d.astype(np.float32), "f32", bias_logical, al, be, activation, lo, hi)
    src = source(family, form, bias_mode, layout, bias_layout,
                 "ldbias" if runtime_ldbias else ldbias, activation, alpha, beta)
    poison = cbuf.copy()
    return Case(src, "fb", (1,), 32,
                [("buf", "a", abuf, False), ("buf", "b", bbuf, False),
                 ("buf", "c", cbuf, True), ("buf", "bias", bias_buf, False),
                 ("i32", chunks), ("u32", lda), ("u32", ldb), ("u32", ldc), ("u32", ldbias),
                 ("f32", al or 1.0), ("f32", be or 1.0), ("f32", lo), ("f32", hi),
                 *args_extra],
                lambda out: check_bits(out["c"], want, layout, ldc, poison))


def check_bits(out, want, layout: str, ld: int, poison) -> None:
    """D equals the oracle bit for bit (signed zeros and NaN payloads included) and every
    element outside the logical tile keeps its poison."""
    got = O.logical(out, M, N, layout, ld).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32))
    r, c = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    untouched = np.ones(out.size, bool)
    untouched[O.index(layout, ld, r, c)] = False
    np.testing.assert_array_equal(out[untouched].view(np.uint32),
                                  poison[untouched].view(np.uint32))


# (family, form, bias mode, D layout, bias layout, runtime ldbias, activation, alpha, beta)
MATRIX = [
    ("fp8", "loop", "row", "row", "row", True, "relu", True, True),
    ("fp8", "loop", "column", "col", "row", True, "clamp", True, True),
    ("fp8", "loop", "matrix", "row", "row", False, "identity", False, True),
    ("fp8", "loop", "matrix", "col", "col", True, "relu", True, False),
    ("fp8", "loop", "matrix", "row", "col", True, "clamp", True, True),
    ("fp8", "chain", "column", "row", "row", True, "relu", True, True),
    ("fp8", "chain", "matrix", "col", "row", False, "clamp", False, False),
    ("fp8", "pipeline", "matrix", "row", "col", True, "relu", True, True),
    ("fp8", "loop", "none", "row", "row", True, "clamp", True, True),
    ("sparse", "loop", "row", "row", "row", True, "clamp", True, True),
    ("sparse", "loop", "matrix", "col", "row", True, "relu", True, True),
    ("sparse", "chain", "column", "row", "row", True, "identity", True, True),
    ("scaled", "loop", "column", "row", "row", True, "relu", True, True),
    ("scaled", "chain", "matrix", "col", "col", True, "clamp", True, True),
]
SM90_FAMILIES = ("fp8", "sparse")      # native on the H200; block-scaled is sm_120a/121a


def case_id(row) -> str:
    fam, form, mode, lay, blay, rt, act, al, be = row
    bias = f"{mode}-{blay}{'-rt' if rt else '-static'}" if mode == "matrix" else mode
    return f"{fam}-{form}-{bias}-D{lay}-{act}"


def build(row, seed: int = 0) -> Case:
    fam, form, mode, lay, blay, rt, act, al, be = row
    return case(fam, form, mode, lay, blay, rt, act, al, be, seed=seed)
