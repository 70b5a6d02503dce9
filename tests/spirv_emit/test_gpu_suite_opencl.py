"""The hardware memory suite (tests/data/gpu_suite/memory.mettle) from SPIR-V on PoCL.

The same Mettle kernels the H200 suite runs, compiled with --emit-spirv, validated, and
executed on the OpenCL runtime against the same numpy oracles, wherever the OpenCL 2.0
profile supports them: staged copies through static and dynamic workgroup memory (the
dynamic arena is the hidden trailing local-memory argument), explicit async staging at 16
and 4 bytes (synchronous replay), and contended u32/u64 atomics. Not here: the
message-passing litmus (it needs two workgroups to run concurrently, which a CPU runtime
does not promise) and the subgroup/row kernels (they assume 32-lane subgroups; the shuffle
with a varying lane is a capability error on this profile, see test_diagnostics).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from tests.spirv_emit.runtime import need_extension
from tests.support.memory_oracles import U32_INITIAL, check_u32_atomics, check_u64_atomics
from tests.support.opencl import Buf, Local, Scalar, opencl_available, run_spirv_kernel
from tests.support.spirv import validate
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

SUITE = Path(__file__).resolve().parents[1] / "data" / "gpu_suite" / "memory.mettle"


def data(dtype, n, seed, scale=1):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)).astype(dtype)
    return (rng.integers(1, 100, n) * scale).astype(dtype)


@cache
def module() -> bytes:
    return compile_file(str(SUITE), Options(emit="spirv")).data


@pytest.fixture(scope="module")
def spv():
    ok, reason = opencl_available()
    if not ok:
        pytest.skip(reason)
    return module()


def test_memory_suite_validates():
    # u64 atomics declare Int64Atomics, which spirv-val accepts only under spv1.0.
    validate(module(), target_env="spv1.0")


def out(result, index, dtype):
    return np.frombuffer(result[index], dtype=dtype)


def test_staged_static_reverse(spv):
    n = 256 * 3 + 100
    x = data("float32", n, 1)
    res = run_spirv_kernel(spv, "staged_static", [(n + 255) // 256 * 256], [256],
                           [Buf(x), Buf(np.full(n, np.nan, np.float32), out=True),
                            Scalar(n, "int32")])
    got = out(res, 1, np.float32)
    g = np.arange(n)
    src = (g // 256) * 256 + 255 - g % 256
    ok = src < n
    np.testing.assert_array_equal(got[ok], 2 * x[src[ok]])
    assert np.isnan(got[~ok]).all()


def test_staged_dynamic_views_share_the_hidden_local_argument(spv):
    n = 128 * 4 + 77
    x = data("float32", n, 2)
    res = run_spirv_kernel(spv, "staged_dynamic", [(n + 127) // 128 * 128], [128],
                           [Buf(x), Buf(np.full(n, np.nan, np.float32), out=True),
                            Buf(np.full(n, 7, np.uint32), "uint32", out=True),
                            Scalar(n, "int32"), Local(256 * 4 + 128 * 4)])
    g = np.arange(n)
    peer = (g // 128) * 128 + (g % 128 + 1) % 128
    ok = peer < n
    np.testing.assert_array_equal(out(res, 1, np.float32)[ok], x[peer[ok]])
    np.testing.assert_array_equal(out(res, 2, np.uint32)[ok], peer[ok].astype(np.uint32))


@pytest.mark.parametrize("kernel,per_block", [("async_stage16", 512), ("async_stage4", 256)])
def test_async_staging_replays_synchronously(spv, kernel, per_block):
    blocks = 3
    src = data("uint32", blocks * per_block, 3)
    res = run_spirv_kernel(spv, kernel, [blocks * 128], [128],
                           [Buf(src, "uint32"),
                            Buf(np.full(blocks * per_block, 0xDEADBEEF, np.uint32), "uint32",
                                out=True)])
    expected = src.reshape(blocks, per_block)[:, ::-1].ravel()
    np.testing.assert_array_equal(out(res, 1, np.uint32), expected)


def test_contended_u32_atomics(spv):
    n = 256 * 6 + 3
    v = data("uint32", n, 4, scale=977)
    res = run_spirv_kernel(spv, "atomics_u32", [(n + 255) // 256 * 256], [256],
                           [Buf(U32_INITIAL, "uint32", out=True), Buf(v, "uint32"),
                            Buf(np.ones(n, np.uint32), "uint32", out=True),
                            Scalar(n, "int32")])
    check_u32_atomics(out(res, 0, np.uint32), out(res, 2, np.uint32), v)


def test_contended_u64_atomics(spv):
    need_extension("cl_khr_int64_base_atomics")
    need_extension("cl_khr_int64_extended_atomics")
    n = 256 * 5 + 17
    v = data("uint64", n, 5, scale=1 << 33)
    res = run_spirv_kernel(spv, "atomics_u64", [(n + 255) // 256 * 256], [256],
                           [Buf(np.zeros(4, np.uint64), "uint64", out=True),
                            Buf(v, "uint64"), Scalar(n, "int32")])
    check_u64_atomics(out(res, 0, np.uint64), v, (n + 255) // 256)
