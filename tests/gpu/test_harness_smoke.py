"""Validates the GPU harness itself with a hand-written PTX vadd, before any compiler exists.

Inputs are random and non-zero; the output buffer is NaN-poisoned and longer than n, so a
missed store (NaN left in c[:n]) and a missing bounds check (c[n:] overwritten) both fail.
Sizes include tails (n not a multiple of the block) and one block-exact case.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar, generate

VADD_PTX = (Path(__file__).with_name("vadd.ptx")).read_text()
BLOCK = 256
PAD = 64  # poisoned elements past n that the bounds check must leave alone


def vadd_case(n: int, seed: int) -> tuple[list, np.ndarray]:
    """Arguments for vadd over n elements, and the numpy oracle for c[:n]."""
    a = generate("float32", n, seed)
    b_seed = seed + 1000
    args = [Buffer("a", "float32", data=a),
            Buffer("b", "float32", n, seed=b_seed),  # generated in the runner process
            Buffer("c", "float32", n + PAD, poison=np.nan, output=True),
            Scalar("uint32", n)]
    return args, a + generate("float32", n, b_seed)


def grid_for(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK


def check_vadd(out: dict, expected: np.ndarray) -> None:
    n = expected.size
    c = out["c"]
    assert c.shape == (n + PAD,)
    np.testing.assert_array_equal(c[:n], expected)
    assert np.isnan(c[n:]).all(), "vadd wrote past n: the bounds check failed"


def test_vadd_ptx_assembles(ptxas):
    ptxas(VADD_PTX, "sm_90a")


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 4099, (1 << 20) + 3])
def test_vadd_matches_numpy(gpu_run, n):
    args, expected = vadd_case(n, seed=n)
    out = gpu_run(VADD_PTX, "vadd", grid_for(n), BLOCK, args)
    check_vadd(out, expected)


@pytest.mark.parametrize("sanitizer", ["memcheck", "racecheck"])
def test_vadd_under_compute_sanitizer(gpu_run, sanitizer):
    n = 4099
    args, expected = vadd_case(n, seed=7)
    out = gpu_run(VADD_PTX, "vadd", grid_for(n), BLOCK, args, sanitizer=sanitizer)
    check_vadd(out, expected)


def test_faulting_kernel_is_reported_not_fatal(gpu_run):
    # c is a null pointer: the kernel faults in the runner process, never in this one.
    n = 1000
    args, _ = vadd_case(n, seed=3)
    args[2] = Scalar("ptr", 0)
    with pytest.raises(AssertionError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        gpu_run(VADD_PTX, "vadd", grid_for(n), BLOCK, args)


def test_missing_kernel_name_is_reported(gpu_run):
    args, _ = vadd_case(8, seed=4)
    with pytest.raises(AssertionError, match="cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"):
        gpu_run(VADD_PTX, "no_such_kernel", 1, BLOCK, args)


def test_bad_ptx_reports_the_jit_log(gpu_run):
    broken = VADD_PTX.replace("add.rn.f32", "add.bogus.f32")
    args, _ = vadd_case(8, seed=5)
    with pytest.raises(AssertionError, match=r"(?s)cuModuleLoadDataEx failed.*JIT log.*bogus"):
        gpu_run(broken, "vadd", 1, BLOCK, args)


def test_memcheck_catches_a_missing_bounds_check(gpu_run):
    # Without the bounds check the tail threads store past c; memcheck must say so (exit 99).
    unchecked = VADD_PTX.replace("@%p1 bra            DONE;", "")
    assert unchecked != VADD_PTX
    n = 4099
    args, _ = vadd_case(n, seed=9)
    args[2] = Buffer("c", "float32", n, poison=np.nan, output=True)
    with pytest.raises(AssertionError, match="compute-sanitizer reported errors"):
        gpu_run(unchecked, "vadd", grid_for(n), BLOCK, args, sanitizer="memcheck")
