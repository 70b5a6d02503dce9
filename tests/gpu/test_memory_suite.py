"""Hardware suite for GPU memory, synchronisation and collectives (issue: memory/sync).

Each case compiles a Mettle kernel with our PTX backend for the local GPU, runs it in its own
process (optionally under compute-sanitizer memcheck/racecheck), and compares with a numpy
oracle on random non-zero data with poisoned outputs.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar, generate, sanitizer_path
from tests.support.memory_oracles import U32_INITIAL, check_u32_atomics, check_u64_atomics
from tests.support.gpu_opt_mode import options
from toolchain.compiler.driver import compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

SUITE = Path(__file__).resolve().parents[1] / "data" / "gpu_suite"
SANITIZERS = [None, "memcheck", "racecheck"]


@cache
def ptx(name: str) -> str:
    arch = detect_local_arch() or "sm_90a"
    return compile_file(str(SUITE / f"{name}.mettle"),
                        options(emit="ptx", gpu_arch=arch, optimize=True)).data.decode()


def run(gpu_run, module, kernel, grid, block, args, sanitizer=None, shared=0):
    if sanitizer and sanitizer_path() is None:
        pytest.skip("compute-sanitizer is not on PATH")
    return gpu_run(ptx(module), kernel, grid, block, args, shared=shared,
                   sanitizer=sanitizer)


@pytest.mark.parametrize("sanitizer", SANITIZERS)
def test_staged_static_workgroup_reverse(gpu_run, sanitizer):
    n = 256 * 7 + 100          # a partial last block: its reversed sources may be absent
    x = generate("float32", n, 1)
    out = run(gpu_run, "memory", "staged_static", (n + 255) // 256, 256,
              [Buffer("x", "float32", data=x),
               Buffer("out", "float32", n + 8, poison=np.nan, output=True),
               Scalar("int32", n)], sanitizer)["out"]
    g = np.arange(n)
    src = (g // 256) * 256 + 255 - g % 256
    ok = src < n
    np.testing.assert_array_equal(out[:n][ok], 2 * x[src[ok]])
    assert np.isnan(out[:n][~ok]).all() and np.isnan(out[n:]).all()


@pytest.mark.parametrize("sanitizer", SANITIZERS)
def test_staged_dynamic_views_alias_one_arena(gpu_run, sanitizer):
    n = 128 * 5 + 77
    x = generate("float32", n, 2)
    res = run(gpu_run, "memory", "staged_dynamic", (n + 127) // 128, 128,
              [Buffer("x", "float32", data=x),
               Buffer("out", "float32", n, poison=np.nan, output=True),
               Buffer("tags", "uint32", n, poison=7, output=True),
               Scalar("int32", n)], sanitizer, shared=256 * 4 + 128 * 4)
    g = np.arange(n)
    peer = (g // 128) * 128 + (g % 128 + 1) % 128
    ok = peer < n
    np.testing.assert_array_equal(res["out"][ok], x[peer[ok]])
    np.testing.assert_array_equal(res["tags"][ok], peer[ok].astype(np.uint32))
    assert np.isnan(res["out"][~ok]).all() and (res["tags"][~ok] == 7).all()


@pytest.mark.parametrize("sanitizer", SANITIZERS)
@pytest.mark.parametrize("kernel,per_block", [("async_stage16", 512), ("async_stage4", 256)])
def test_explicit_async_staging(gpu_run, sanitizer, kernel, per_block):
    blocks = 6
    src = generate("uint32", blocks * per_block, 3)
    out = run(gpu_run, "memory", kernel, blocks, 128,
              [Buffer("src", "uint32", data=src),
               Buffer("out", "uint32", blocks * per_block, poison=0xDEADBEEF, output=True)],
              sanitizer)["out"]
    expected = src.reshape(blocks, per_block)[:, ::-1].ravel()
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("sanitizer", [None, "memcheck"])
def test_contended_u32_atomics(gpu_run, sanitizer):
    n = 256 * 40 + 3
    v = generate("uint32", n, 4) * np.uint32(977)
    res = run(gpu_run, "memory", "atomics_u32", (n + 255) // 256, 256,
              [Buffer("counters", "uint32", data=U32_INITIAL, output=True),
               Buffer("values", "uint32", data=v),
               Buffer("olds", "uint32", n, poison=1, output=True),
               Scalar("int32", n)], sanitizer)
    check_u32_atomics(res["counters"], res["olds"], v)


@pytest.mark.parametrize("sanitizer", [None, "memcheck", "racecheck"])
def test_contended_u64_atomics_global_and_workgroup(gpu_run, sanitizer):
    n = 256 * 9 + 17
    v = generate("uint64", n, 5) * np.uint64(1 << 33)
    res = run(gpu_run, "memory", "atomics_u64", (n + 255) // 256, 256,
              [Buffer("counters", "uint64", 4, poison=0, output=True),
               Buffer("values", "uint64", data=v), Scalar("int32", n)], sanitizer)
    check_u64_atomics(res["counters"], v, (n + 255) // 256)


def test_release_acquire_message_passing(gpu_run):
    for trial in range(3):
        payload = 0xC0FFEE00 + trial
        res = run(gpu_run, "memory", "message_passing", 2, 32,
                  [Buffer("data", "uint32", 1, poison=0), Buffer("flag", "uint32", 1, poison=0),
                   Buffer("result", "uint32", 2, poison=0, output=True),
                   Scalar("uint32", payload)])
        assert res["result"][1] == 1, "the consumer never observed the flag"
        assert res["result"][0] == payload, "acquire load did not make the data visible"


def _subgroup_oracle(x: np.ndarray, f: np.ndarray, blocks: int):
    n = x.size
    out = np.zeros((11, n), np.uint64)
    fout = np.zeros((3, n), np.float64)
    for b in range(blocks):
        for lo, hi in ((0, 32), (32, 48)):
            idx = np.arange(b * 48 + lo, b * 48 + hi)
            v, fv = x[idx].astype(np.uint64), f[idx].astype(np.float64)
            size = hi - lo
            lanes = np.arange(size)
            out[0, idx] = v.sum() % 2**32
            out[1, idx], out[2, idx] = v.min(), v.max()
            out[3, idx] = np.cumsum(v) % 2**32
            out[4, idx] = (np.cumsum(v) - v) % 2**32
            out[5, idx] = v[3]
            out[6, idx] = v[(lanes + 1) % size]
            out[7, idx] = sum(1 << int(l) for l in lanes if v[l] & 1)
            out[8, idx] = 0
            out[9, idx] = int((v > 90).any()) + 2 * int((v > 0).all())
            out[10, idx] = lanes + 100 * size
            fout[0, idx], fout[1, idx], fout[2, idx] = fv.sum(), fv.max(), fv[0]
    return out.astype(np.uint32), fout


@pytest.mark.parametrize("sanitizer", SANITIZERS)
def test_subgroup_collectives_on_partial_subgroup(gpu_run, sanitizer):
    blocks = 5
    n = blocks * 48
    x = generate("uint32", n, 6)
    f = generate("float32", n, 7)
    res = run(gpu_run, "subgroups", "subgroup_suite", blocks, 48,
              [Buffer("x", "uint32", data=x), Buffer("f", "float32", data=f),
               Buffer("out", "uint32", 11 * n, poison=0xAAAAAAAA, output=True),
               Buffer("fout", "float32", 3 * n, poison=np.nan, output=True),
               Scalar("int32", n)], sanitizer)
    expected, fexpected = _subgroup_oracle(x, f, blocks)
    got = res["out"].reshape(11, n)
    for row in range(11):
        np.testing.assert_array_equal(got[row], expected[row], err_msg=f"row {row}")
    np.testing.assert_allclose(res["fout"].reshape(3, n), fexpected, rtol=1e-5)


def _softmax_oracle(x, cols):
    xs = x[:, :cols].astype(np.float64)
    e = np.exp(xs - xs.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm_oracle(x, cols, gamma, beta, eps):
    xs = x[:, :cols].astype(np.float64)
    mean = xs.mean(axis=1, keepdims=True)
    var = ((xs - mean) ** 2).mean(axis=1, keepdims=True)
    return (xs - mean) / np.sqrt(var + eps) * gamma + beta


def _rows_case(rows, cols, pad, seed):
    x = np.full((rows, cols + pad), np.nan, np.float32)
    x[:, :cols] = generate("float32", rows * cols, seed).reshape(rows, cols) * 4
    return x


# (kernel, rows per workgroup, threads): one subgroup per row, or one workgroup per row.
# shape -> (rows per block, threads per block); the wide kernels take their width from the
# launch (64, 128 or 256 work-items per row).
ROW_KERNELS = {"rows": (4, 128), "wide": (1, 256), "wide128": (1, 128), "wide64": (1, 64)}
# Column counts that are multiples of 4 get strides that are too, so the 128-bit paths
# (register-cached up to 1024 / 16 x width columns, streaming beyond) run; the others take
# the scalar paths.
ROW_SHAPES = [("rows", 37, 29), ("rows", 19, 1000), ("rows", 8, 4099), ("rows", 6, 1024),
              ("rows", 5, 2048), ("wide", 3, 4096), ("wide", 4, 4099), ("wide", 2, 5000),
              ("wide", 5, 1000), ("wide", 3, 29), ("wide", 2, 8192), ("wide64", 5, 1024),
              ("wide64", 3, 1000), ("wide64", 4, 1028), ("wide64", 3, 37),
              ("wide128", 3, 2048), ("wide128", 2, 2052), ("wide128", 4, 516)]


def _run_rows(gpu_run, kernel, shape, rows, cols, extra, sanitizer, seed):
    """Run a row kernel on padded rows (poisoned padding); returns (x, y) views."""
    if sanitizer == "racecheck" and shape == "rows":
        pytest.skip("the one-subgroup-per-row kernel uses no workgroup memory")
    per_block, threads = ROW_KERNELS[shape]
    pad = (4, 8) if cols % 4 == 0 else (3, 5)
    ldx, ldy = cols + pad[0], cols + pad[1]
    x = _rows_case(rows, cols, pad[0], seed)
    args = [Buffer("x", "float32", data=x.ravel()),
            Buffer("y", "float32", rows * ldy, poison=np.nan, output=True), *extra[:2],
            Scalar("int32", rows), Scalar("int32", cols), Scalar("int32", ldx),
            Scalar("int32", ldy), *extra[2:]]
    y = run(gpu_run, "rows", kernel, (rows + per_block - 1) // per_block, threads, args,
            sanitizer)["y"].reshape(rows, ldy)
    assert np.isnan(y[:, cols:]).all(), "the kernel wrote into the row padding"
    return x, y[:, :cols]


@pytest.mark.parametrize("sanitizer", [None, "memcheck", "racecheck"])
@pytest.mark.parametrize("shape,rows,cols", ROW_SHAPES)
def test_row_softmax(gpu_run, sanitizer, shape, rows, cols):
    kernel = "softmax_rows" if shape == "rows" else "softmax_wide"
    x, y = _run_rows(gpu_run, kernel, shape, rows, cols, [], sanitizer, rows + cols)
    np.testing.assert_allclose(y, _softmax_oracle(x, cols), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("sanitizer", [None, "memcheck", "racecheck"])
@pytest.mark.parametrize("shape,rows,cols", ROW_SHAPES)
def test_affine_layer_norm(gpu_run, sanitizer, shape, rows, cols):
    kernel = "layernorm_rows" if shape == "rows" else "layernorm_wide"
    gamma, beta = generate("float32", cols, 11), generate("float32", cols, 12)
    extra = [Buffer("gamma", "float32", data=gamma), Buffer("beta", "float32", data=beta),
             Scalar("float32", 1e-5)]
    x, y = _run_rows(gpu_run, kernel, shape, rows, cols, extra, sanitizer, 3 * rows + cols)
    np.testing.assert_allclose(y, _layernorm_oracle(x, cols, gamma, beta, 1e-5),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", ["softmax_wide", "layernorm_wide"])
@pytest.mark.parametrize("threads", [100, 288])
def test_wide_rows_refuse_unsupported_widths(gpu_run, kernel, threads):
    """The wide kernels keep per-subgroup partials for at most 8 full subgroups: launched
    with a width that is not a multiple of 32, or wider than 256, they write nothing."""
    rows, cols = 3, 512
    x = _rows_case(rows, cols, 4, 5)
    extra = [] if kernel == "softmax_wide" else \
        [Buffer("gamma", "float32", data=generate("float32", cols, 11)),
         Buffer("beta", "float32", data=generate("float32", cols, 12))]
    args = [Buffer("x", "float32", data=x.ravel()),
            Buffer("y", "float32", rows * (cols + 8), poison=np.nan, output=True), *extra,
            Scalar("int32", rows), Scalar("int32", cols), Scalar("int32", cols + 4),
            Scalar("int32", cols + 8)]
    if kernel == "layernorm_wide":
        args.append(Scalar("float32", 1e-5))
    y = run(gpu_run, "rows", kernel, rows, threads, args)["y"]
    assert np.isnan(y).all()


@pytest.mark.parametrize("n", [4, 1001, (1 << 20) + 6])
def test_vadd4_vector_memory(gpu_run, n):
    a, b = generate("float32", n, 21), generate("float32", n, 22)
    out = gpu_run(ptx("vadd4"), "vadd4", (n + 1023) // 1024, 256,
                  [Buffer("a", "float32", data=a), Buffer("b", "float32", data=b),
                   Buffer("c", "float32", n + 40, poison=np.nan, output=True),
                   Scalar("int32", n)])["c"]
    np.testing.assert_array_equal(out[:n], a + b)
    assert np.isnan(out[n:]).all()
