"""Emitted SPIR-V runs correctly on PoCL 6 (real OpenCL, in the trixie root).

Inputs are random and non-zero; outputs start poisoned (NaN or 0xDEADBEEF), so a kernel that
writes nothing or the wrong element fails. Every module is also validated by spirv-val
before it runs. Skips (with the probe's reason) when the OpenCL runtime is unavailable.
"""
from __future__ import annotations

import pytest

from tests.spirv_emit import irkernels as K
from tests.spirv_emit.runtime import need_extension
from tests.support.opencl import Buf, Local, Scalar, opencl_available, run_spirv_kernel
from tests.support.spirv import validate
from toolchain.compiler.ir import U64
from toolchain.compiler.targets.spirv import emit_spirv

np = pytest.importorskip("numpy")
POISON = 0xDEADBEEF


@pytest.fixture(scope="module", autouse=True)
def _runtime():
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)


def build(module, env: str = "opencl2.0") -> bytes:
    spv = emit_spirv(module)
    validate(spv, env)
    return spv


def rand_f32(rng, n, lo=0.5, hi=4.0):
    return (rng.uniform(lo, hi, n) * rng.choice([-1, 1], n)).astype(np.float32)


def nan_out(n):
    return np.full(n, np.nan, dtype=np.float32)


def poison_u32(n):
    return np.full(n, POISON, dtype=np.uint32)


def test_vadd_with_odd_tail():
    rng = np.random.default_rng(1)
    n, total = 1000, 1024
    a, b = rand_f32(rng, total), rand_f32(rng, total)
    out = run_spirv_kernel(build(K.vadd_module()), "vadd", [total], [64],
                           [Buf(a), Buf(b), Buf(nan_out(total), out=True), Scalar(n, "int32")])
    got = np.frombuffer(out[2], np.float32)
    np.testing.assert_array_equal(got[:n], (a + b)[:n])
    assert np.isnan(got[n:]).all()


def test_saxpy_through_a_helper():
    rng = np.random.default_rng(2)
    n, total, a = 777, 832, np.float32(1.5)
    x, y = rand_f32(rng, total), rand_f32(rng, total)
    out = run_spirv_kernel(build(K.saxpy_module()), "saxpy", [total], [64],
                           [Scalar(float(a), "float32"), Buf(x), Buf(y.copy(), out=True),
                            Scalar(n, "int32")])
    got = np.frombuffer(out[2], np.float32)
    np.testing.assert_array_equal(got[:n], (a * x + y)[:n])
    np.testing.assert_array_equal(got[n:], y[n:])


def test_index3d_odd_tails():
    nx, ny, nz = 13, 7, 5
    gx, gy, gz = 16, 8, 6                       # 4x2x2 groups: odd tails on every axis
    total = nx * ny * nz
    poison = np.full(total + 8, -7, dtype=np.int32)
    out = run_spirv_kernel(build(K.index3d_module()), "index3d", [gx, gy, gz], [4, 4, 2],
                           [Buf(poison, "int32", out=True), Scalar(nx, "int32"),
                            Scalar(ny, "int32"), Scalar(nz, "int32")])
    got = np.frombuffer(out[0], np.int32)
    np.testing.assert_array_equal(got[:total], np.arange(total, dtype=np.int32))
    assert (got[total:] == -7).all()


def test_math_within_opencl_precision():
    rng = np.random.default_rng(3)
    n = 500
    x = rand_f32(rng, 512)
    out = run_spirv_kernel(build(K.math_module()), "math", [512], [64],
                           [Buf(x), Buf(nan_out(512), out=True), Scalar(n, "int32")])
    got = np.frombuffer(out[1], np.float32)[:n]
    v = x[:n].astype(np.float64)
    a = np.abs(v)
    want = np.sqrt(a) + np.exp(v * 0.5) * np.sin(v) + np.cos(v) - np.log(a + 1) + 1 / np.sqrt(a)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_static_workgroup_and_private_arrays():
    rng = np.random.default_rng(4)
    total, n = 256, 250
    x = rand_f32(rng, total)
    out = run_spirv_kernel(build(K.staged_module()), "staged", [total], [64],
                           [Buf(x), Buf(nan_out(total), out=True), Scalar(n, "int32")])
    got = np.frombuffer(out[1], np.float32)
    lane = np.arange(total) % 64
    mirrored = x.reshape(-1, 64)[:, ::-1].reshape(-1)
    want = mirrored * 2 + (lane % 4)
    np.testing.assert_array_equal(got[:n], want[:n].astype(np.float32))
    assert np.isnan(got[n:]).all()


def test_dynamic_workgroup_views_bound_as_a_local_argument():
    rng = np.random.default_rng(5)
    total, local = 192, 64
    x = rand_f32(rng, total)
    out = run_spirv_kernel(build(K.dynamic_module()), "dynamic", [total], [local],
                           [Buf(x), Buf(nan_out(total), out=True),
                            Buf(poison_u32(total), "uint32", out=True), Local(8 * local)])
    got = np.frombuffer(out[1], np.float32)
    flags = np.frombuffer(out[2], np.uint32)
    i = np.arange(total)
    mirror_i = (i // local) * local + (local - 1 - i % local)
    np.testing.assert_array_equal(got, x[mirror_i] + (3 * i).astype(np.float32))
    np.testing.assert_array_equal(flags, (3 * mirror_i).astype(np.uint32))


@pytest.mark.parametrize("const_count", [True, False], ids=["unrolled", "loop"])
def test_async_copy_replay(const_count):
    rng = np.random.default_rng(6)
    items = 64
    src = rng.integers(1, 2**32, 4 * items, dtype=np.uint32)
    out = run_spirv_kernel(build(K.async_module(const_count)), "stage", [items], [32],
                           [Buf(src, "uint32"), Buf(poison_u32(4 * items), "uint32",
                                                    out=True), Scalar(4, "int32")])
    got = np.frombuffer(out[1], np.uint32)
    g = np.arange(items)
    lane, grp = g % 32, g // 32
    want = np.empty(4 * items, np.uint32)
    for j in range(4):
        want[4 * g + j] = src[grp * 128 + (4 * (lane + 1) + j) % 128]
    np.testing.assert_array_equal(got, want)


def _atomics_expect(items: int, dtype, start):
    i = np.arange(items, dtype=np.uint64)
    c = start.astype(np.uint64).copy()
    mask = (1 << (64 if dtype == np.uint64 else 32)) - 1
    c[0] = (c[0] + items) & mask
    c[1] = (c[1] - 2 * items) & mask
    c[2] = max(int(c[2]), items - 1)
    c[3] = min(int(c[3]), 0)
    bits = 0
    flips = 0
    for k in range(items):
        bits |= 1 << (k & 31)
        flips ^= 1 << (k & 31)
    c[4] |= bits
    c[5] ^= flips
    c[6] &= ~np.uint64(bits) & np.uint64(mask)
    c[8] = (c[8] + 3 * items) & mask
    c[9] = 64
    return c.astype(dtype), i


@pytest.mark.parametrize("width", [32, 64])
def test_atomic_contention(width):
    if width == 64:
        need_extension("cl_khr_int64_base_atomics")
        need_extension("cl_khr_int64_extended_atomics")   # min/max/and/or/xor
    dtype, name = (np.uint32, "uint32") if width == 32 else (np.uint64, "uint64")
    elem = None if width == 32 else U64
    env = "opencl2.0" if width == 32 else "spv1.0"   # Int64Atomics validates only there
    module = K.atomics_module() if elem is None else K.atomics_module(elem)
    items = 256
    rng = np.random.default_rng(7)
    start = rng.integers(1000, 2**31, 10, dtype=np.uint64).astype(dtype)
    start[6] = dtype(0xFFFF_FFFF)
    out = run_spirv_kernel(build(module, env), "atomics", [items], [64],
                           [Buf(start.copy(), name, out=True),
                            Buf(np.full(items, 7, dtype), name, out=True)])
    got = np.frombuffer(out[0], dtype)
    want, _ = _atomics_expect(items, dtype, start)
    for k in (0, 1, 2, 3, 4, 5, 6, 8, 9):
        assert got[k] == want[k], f"counter {k}: {got[k]} != {want[k]}"
    olds = np.frombuffer(out[1], dtype)
    # exchange: the olds plus the final value are exactly the start value and all ids
    seen = sorted([int(v) for v in olds] + [int(got[7])])
    assert seen == sorted([int(start[7])] + list(range(items)))


def _arith_oracle(a: int, b: int, f: float) -> list[int]:
    def trunc_div(x, y):
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    def wrap(v, bits, signed):
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v
    def to_int(x):                          # float->int of NaN is unspecified in C
        return None if x != x else int(x)
    ua, ub = a & 0xFFFFFFFF, b & 0xFFFFFFFF
    f32, b32 = float(np.float32(f)), float(np.float32(b))
    fmin = b32 if f32 != f32 else min(f32, b32)     # OpenCL fmin ignores a NaN operand
    flags = (f32 == f32) + 2 * (f32 != f32) + 4 * (f32 < b32)
    return [trunc_div(a, b), a - b * trunc_div(a, b), ua // ub, ua % ub, a >> 3, ua >> 3,
            wrap(a << 5, 32, True), min(a, b), max(a, b), min(ua, ub), max(ua, ub),
            wrap(a, 8, True), wrap(a, 16, False), ua, to_int(f32), to_int(abs(f32)), flags,
            (a != 0) + 2 * (f32 != 0), int(np.float32(fmin) * np.float32(1000)),
            to_int(np.float64(f32) * 1e6)]


def test_arithmetic_and_conversions_follow_c_semantics():
    rng = np.random.default_rng(8)
    n = 128
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(1, 2**16, n, dtype=np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    a[:4] = [0, -7, 7, -2**31]
    b[:4] = [3, 2, -2, 7]
    f = rand_f32(rng, n, 0.01, 5000)
    f[:3] = [np.nan, 0.0, -0.75]
    poison = np.full(n * K.ARITH_OUTPUTS, 0x5A5A5A5A, dtype=np.int64)
    out = run_spirv_kernel(build(K.arith_module()), "arith", [n], [64],
                           [Buf(a, "int32"), Buf(b, "int32"), Buf(f),
                            Buf(poison, "int64", out=True)])
    got = np.frombuffer(out[3], np.int64).reshape(n, K.ARITH_OUTPUTS)
    for k in range(n):
        want = _arith_oracle(int(a[k]), int(b[k]), float(f[k]))
        want = [int(g) if w is None else w for w, g in zip(want, got[k])]
        assert list(got[k]) == want, f"item {k}: a={a[k]} b={b[k]} f={f[k]}"


def test_structs_memcpy_byteadd_and_constant_tables():
    rng = np.random.default_rng(9)
    n = 64
    x = rand_f32(rng, n)
    out = run_spirv_kernel(build(K.aggregates_module()), "agg", [n], [32],
                           [Buf(x), Buf(nan_out(n), out=True)])
    got = np.frombuffer(out[1], np.float32)
    i = np.arange(n)
    table = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    np.testing.assert_array_equal(got, x * 2 + table[i % 4] + i.astype(np.float32))
