"""Hardware suite (H200, sm_90a) for the FP8 mma.sync and structured 2:4 mma.sp tensor
operations: the shared cases of tests/tensor/narrow_cases.py (exactly representable
inputs, padded strides, poisoned padding, invalid 2:4 masks that must be clamped to 0011)
compiled for the local GPU, each run in its own process by harness.run_kernel and compared
bit for bit with tests/support/tensor_oracle.py. The same cases run on the CPU PTX
interpreter in tests/tensor/test_fp8_sparse_scaled.py. Block-scaled regions have their
native instruction only on sm_120a/sm_121a; here they run the exact replay alone (integer
FP8/FP6/FP4 and scale decoding), which the last cases check.
"""
from __future__ import annotations

from functools import cache

import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.tensor import narrow_cases as NC
from tests.tensor.kernels import compile_ptx
from toolchain.compiler.targets.ptx.profiles import detect_local_arch


@cache
def arch() -> str:
    return detect_local_arch() or "sm_90a"


def run_case(run, case: NC.Case, target: str | None = None, **kw) -> None:
    """Run `case` compiled for `target` (default: the local GPU) against its oracle."""
    args = [Buffer(a[1], str(a[2].dtype), data=a[2], output=a[3]) if a[0] == "buf"
            else Scalar("uint32", a[1]) for a in case.args]
    out = run(compile_ptx(case.source, target or arch()), case.kernel, case.grid, case.block,
              args, **kw)
    case.check(out)


FP8_PAIRS = [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")]


# ---------------------------------------------------------------- FP8 tiles
@pytest.mark.parametrize("at,bt", FP8_PAIRS)
@pytest.mark.parametrize("shape,layouts,transpose", [
    ("m16n8k32", ("row", "col", "row", "row"), (False, False)),
    ("m16n8k16", ("col", "row", "col", "row"), (False, False)),
    ("m32n16k48", ("row", "col", "row", "col"), (True, False)),
    ("m48n24k64", ("col", "col", "row", "col"), (True, True)),
])
def test_fp8_tile_against_oracle(gpu_run, at, bt, shape, layouts, transpose):
    run_case(gpu_run, NC.fp8_tile(at, bt, shape, layouts, transpose, pad=5, seed=len(shape)))


def test_fp8_tile_workgroup_scope(gpu_run):
    run_case(gpu_run, NC.fp8_tile("e4m3", "e5m2", "m32n16k32", scope="workgroup"))


# ---------------------------------------------------------------- FP8 regions
@pytest.mark.parametrize("at,bt", FP8_PAIRS)
@pytest.mark.parametrize("shape", ["m16n16k32", "m16n8k16"])
def test_fp8_matmul_19x23x21_tails_padded(gpu_run, at, bt, shape):
    run_case(gpu_run, NC.fp8_matmul(at, bt, shape, 19, 23, 21, pad=7))


@pytest.mark.parametrize("at,bt", [("e4m3", "e5m2"), ("e5m2", "e5m2")])
def test_fp8_matmul_interior_grid_transpose_and_k_tail(gpu_run, at, bt):
    run_case(gpu_run, NC.fp8_matmul(at, bt, "m32n32k32", 70, 75, 83, pad=3, warps=2,
                                    transpose=(True, True)))


@pytest.mark.parametrize("K", [0, 7, 32])
def test_fp8_matmul_small_k_and_partial_warp(gpu_run, K):
    run_case(gpu_run, NC.fp8_matmul("e4m3", "e4m3", "m16n16k32", 33, 17, K))
    run_case(gpu_run, NC.fp8_matmul("e4m3", "e4m3", "m16n16k32", 32, 32, 64, block=20))


def test_fp8_matmul_512_cubed(gpu_run):
    run_case(gpu_run, NC.fp8_matmul("e4m3", "e5m2", "m64n32k32", 512, 512, 512, warps=4))


# ---------------------------------------------------------------- structured 2:4
@pytest.mark.parametrize("t", ["f16", "bf16"])
@pytest.mark.parametrize("shape,layouts,transpose,invalid", [
    ("m16n8k16", ("row", "col", "row", "row"), (False, False), False),
    ("m16n8k16", ("row", "row", "row", "row"), (False, False), True),
    ("m32n16k32", ("col", "row", "col", "row"), (True, False), True),
    ("m48n24k48", ("row", "col", "row", "col"), (False, True), True),
])
def test_sparse_tile_against_oracle(gpu_run, t, shape, layouts, transpose, invalid):
    run_case(gpu_run, NC.sparse_tile(t, shape, layouts, transpose, pad=6, seed=3,
                                     invalid=invalid))


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_sparse_matmul_19x23x19_tails_invalid_masks(gpu_run, t):
    run_case(gpu_run, NC.sparse_matmul(t, "m16n16k16", 19, 23, 19, pad=5, invalid=True))


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_sparse_matmul_interior_grid_transpose(gpu_run, t):
    run_case(gpu_run, NC.sparse_matmul(t, "m32n16k16", 70, 75, 53, pad=3, warps=2,
                                       transpose=(True, True), invalid=True))


def test_sparse_matmul_k_zero_and_partial_warp(gpu_run):
    run_case(gpu_run, NC.sparse_matmul("f16", "m16n16k16", 33, 17, 0))
    run_case(gpu_run, NC.sparse_matmul("f16", "m16n16k16", 32, 32, 32, block=20))


# ---------------------------------------------------------------- block-scaled (replay)
@pytest.mark.parametrize("at,bt,shape,mode,stype", [
    ("e4m3", "e2m1", "m16n8k32", "block32", "ue8m0"),
    ("e3m2", "e2m3", "m16n16k32", "block32", "ue8m0"),
    ("e2m1", "e2m1", "m16n8k64", "block16", "ue4m3"),
])
def test_scaled_region_replays_exactly(gpu_run, at, bt, shape, mode, stype):
    run_case(gpu_run, NC.scaled_matmul(at, bt, shape, mode, stype, 37, 29, 101, warps=2,
                                       transpose=(False, True)))
    run_case(gpu_run, NC.scaled_tile(at, bt, shape, mode, stype))


# ---------------------------------------------------------------- replay on portable
def test_fp8_and_sparse_replay_on_the_portable_profile(gpu_run):
    """compute_75 has neither FP8 mma.sync nor mma.sp: the same cases as exact replay."""
    for case in (NC.fp8_tile("e4m3", "e5m2", "m32n16k48", transpose=(True, False)),
                 NC.fp8_matmul("e5m2", "e4m3", "m16n8k32", 35, 29, 70, warps=2),
                 NC.sparse_tile("bf16", "m32n16k32", ("col", "row", "col", "row"),
                                (True, False), invalid=True),
                 NC.sparse_matmul("f16", "m16n16k16", 19, 23, 19, pad=5, invalid=True)):
        run_case(gpu_run, case, target="portable")
