"""compute-sanitizer memcheck variants of a representative subset of the tensor hardware
cases (tests/gpu/test_tensor.py and test_tensor_fp8_sparse.py): the same kernels and
oracle checks, run under `compute-sanitizer --tool memcheck` so an out-of-bounds or
misaligned access in native interiors, replay tails or padded strides fails the test even
when the numbers happen to be right. Skips when compute-sanitizer is not on PATH.
"""
from __future__ import annotations

import functools

import pytest

from tests.gpu import test_tensor as base
from tests.gpu import test_tensor_fp8_sparse as narrow
from tests.tensor import narrow_cases as NC


@pytest.fixture
def memcheck_run():
    from tests.gpu.harness import run_kernel
    return functools.partial(run_kernel, sanitizer="memcheck")


@pytest.mark.parametrize("fmt,acc,shape,transpose", [
    ("f16", "f32", "m16n16k16", False), ("bf16", "f32", "m48n32k32", True),
    ("f64", "f64", "m16n24k8", True), ("u8", "i32", "m32n32k32", False)])
def test_wmma_tile_memcheck(memcheck_run, fmt, acc, shape, transpose):
    base.test_wmma_tile_against_oracle(memcheck_run, fmt, acc, shape, transpose)


def test_subbyte_and_b1_memcheck(memcheck_run):
    base.test_subbyte_wmma_tile(memcheck_run, "i4")
    base.test_b1_popcount_tile(memcheck_run, "xor_popcount")


@pytest.mark.parametrize("fmt,acc", [("f16", "f32"), ("f64", "f64"), ("i8", "i32")])
def test_matmul_tails_memcheck(memcheck_run, fmt, acc):
    base.test_matmul_19x23x21_tails_padded(memcheck_run, fmt, acc)


def test_matmul_interior_transpose_memcheck(memcheck_run):
    base.test_matmul_interior_with_grid_tiles_and_transpose(memcheck_run, "bf16", "f32")


def test_matmul_partial_warp_and_misaligned_memcheck(memcheck_run):
    base.test_matmul_k_zero_small_k_and_partial_warp(memcheck_run, 7)
    base.test_matmul_misaligned_strides_replay(memcheck_run)


@pytest.mark.parametrize("fmt,mode,act,layout,scope", [
    ("f16", "matrix", "relu", "col", "subgroup"), ("f32", "row", "clamp", "col", "workgroup")])
def test_epilogue_memcheck(memcheck_run, fmt, mode, act, layout, scope):
    base.test_epilogue_against_exact_oracle(memcheck_run, fmt, mode, act, layout, scope)


def test_fp8_and_sparse_memcheck(memcheck_run):
    narrow.run_case(memcheck_run, NC.fp8_tile("e4m3", "e5m2", "m32n16k48", pad=5,
                                              transpose=(True, False)))
    narrow.run_case(memcheck_run, NC.fp8_matmul("e5m2", "e4m3", "m32n32k32", 70, 75, 83,
                                                pad=3, warps=2, transpose=(True, True)))
    narrow.run_case(memcheck_run, NC.sparse_matmul("bf16", "m16n16k16", 19, 23, 19, pad=5,
                                                   invalid=True))
