"""Mettle kernels compiled by our PTX backend, executed on the GPU against numpy oracles.

vadd, saxpy through a device helper, a 3-D index kernel with odd tails, and the f32 math
intrinsics. Inputs are random and non-zero, outputs are poisoned and longer than the range
the kernel may write, so a missed store and an out-of-bounds store both fail. The target is
the local GPU (nvidia-smi), as the CLI picks it without --gpu-arch.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar, generate
from tests.support.gpu_opt_mode import optimizing, options
from toolchain.compiler.driver import compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

KERNELS = Path(__file__).resolve().parents[1] / "data" / "kernels"
PAD = 37


def compile_kernel(name: str) -> str:
    arch = detect_local_arch() or "sm_90a"
    return compile_file(str(KERNELS / f"{name}.mettle"), options(emit="ptx", gpu_arch=arch)) \
        .data.decode()


@pytest.fixture(scope="module")
def ptx():
    return {k: compile_kernel(k) for k in ("vadd", "saxpy_helper", "index3d", "math")}


def blocks(n: int, block: int) -> int:
    return (n + block - 1) // block


@pytest.mark.parametrize("n", [1, 1000, 4099, (1 << 20) + 3])
def test_vadd(gpu_run, ptx, n):
    a, b = generate("float32", n, n), generate("float32", n, n + 1)
    out = gpu_run(ptx["vadd"], "vadd", blocks(n, 256), 256,
                  [Buffer("a", "float32", data=a), Buffer("b", "float32", data=b),
                   Buffer("c", "float32", n + PAD, poison=np.nan, output=True),
                   Scalar("int32", n)])
    np.testing.assert_array_equal(out["c"][:n], a + b)
    assert np.isnan(out["c"][n:]).all()


@pytest.mark.parametrize("n", [77, 100003])
def test_saxpy_with_device_helper(gpu_run, ptx, n):
    # a called helper is a .func; under -O the inliner takes it (and nothing calls it)
    assert (".func" in ptx["saxpy_helper"]) != optimizing()
    assert "host_only" not in ptx["saxpy_helper"]
    x, y = generate("float32", n, 3), generate("float32", n, 4)
    alpha = np.float32(1.75)
    out = gpu_run(ptx["saxpy_helper"], "saxpy", blocks(n, 128), 128,
                  [Scalar("float32", float(alpha)), Buffer("x", "float32", data=x),
                   Buffer("y", "float32", data=np.concatenate(
                       [y, np.full(PAD, np.nan, np.float32)]), output=True),
                   Scalar("int32", n)])
    expected = (alpha * x + y).astype(np.float32)
    np.testing.assert_allclose(out["y"][:n], expected, rtol=1e-6, atol=1e-6)
    assert np.isnan(out["y"][n:]).all()


def test_index3d_with_odd_tails(gpu_run, ptx):
    nx, ny, nz = 37, 11, 5
    block = (8, 4, 2)
    grid = (blocks(nx, 8), blocks(ny, 4), blocks(nz, 2))
    total = nx * ny * nz
    out = gpu_run(ptx["index3d"], "index3d", grid, block,
                  [Buffer("out", "int32", total + PAD, poison=-7, output=True),
                   Scalar("int32", nx), Scalar("int32", ny), Scalar("int32", nz)])
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    expected = (x + 1000 * y + 1000000 * z).astype(np.int32).ravel()
    np.testing.assert_array_equal(out["out"][:total], expected)
    assert (out["out"][total:] == -7).all()


def test_math_intrinsics(gpu_run, ptx):
    n = 5003
    x = (generate("float32", n, 9) * np.float32(3.0)).astype(np.float32)
    out = gpu_run(ptx["math"], "math", blocks(n, 256), 256,
                  [Buffer("x", "float32", data=x),
                   Buffer("out", "float32", 7 * n + PAD, poison=np.nan, output=True),
                   Scalar("int32", n)])
    a = np.abs(x).astype(np.float64)
    rows = [np.sqrt(a), 1 / np.sqrt(a + 1), a, np.sin(x), np.cos(x), np.log(a + 1),
            np.exp(x.astype(np.float64) / 4)]
    got = out["out"][:7 * n].reshape(7, n)
    for r, (expected, tol) in enumerate(zip(rows, [1e-6, 1e-5, 0, 2e-6, 2e-6, 2e-6, 2e-6])):
        np.testing.assert_allclose(got[r], expected, rtol=max(tol, 1e-6), atol=tol + 1e-6,
                                   err_msg=f"math row {r}")
    assert np.isnan(out["out"][7 * n:]).all()
