"""Struct values in device code on the GPU: tests/data/kernels/aggregates.mettle (struct
locals and copies, by-value struct parameters and results of `.func`s in the PTX ABI's
byte-array form, methods, tagged enums and match) against its exact oracle, at -O0 and -O.
The same kernel runs as SPIR-V on PoCL in tests/ptx/test_aggregates.py; the mixed-width
struct kernel of tests/ptx/test_promote.py (struct locals in registers) runs here too."""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.support.aggregate_kernel import (KERNEL, MIXED_SOURCE, OUTPUTS, SOURCE, expected,
                                            mixed_expected)
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

PAD = 9


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O"])
@pytest.mark.parametrize("n", [1, 131, 1000])
def test_struct_values_in_kernels(gpu_run, optimize, n):
    ptx = compile_file(str(SOURCE), Options(emit="ptx", optimize=optimize,
                                            gpu_arch=detect_local_arch() or "sm_90a"))
    want, iwant = expected(n)
    out = gpu_run(ptx.data.decode(), KERNEL, (n + 63) // 64, 64,
                  [Buffer("out", "float32", n * OUTPUTS + PAD, poison=np.nan, output=True),
                   Buffer("iout", "int64", n * OUTPUTS + PAD, poison=-5, output=True),
                   Scalar("int32", n)])
    np.testing.assert_array_equal(out["out"][:n * OUTPUTS], want)
    np.testing.assert_array_equal(out["iout"][:n * OUTPUTS], iwant)
    assert np.isnan(out["out"][n * OUTPUTS:]).all() and (out["iout"][n * OUTPUTS:] == -5).all()


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O"])
def test_mixed_width_struct_locals(gpu_run, tmp_path, optimize):
    path = tmp_path / "mixed.mettle"
    path.write_text(MIXED_SOURCE)
    ptx = compile_file(str(path), Options(emit="ptx", optimize=optimize,
                                          gpu_arch=detect_local_arch() or "sm_90a"))
    n = 1000
    want, iwant = mixed_expected(n)
    out = gpu_run(ptx.data.decode(), "k", (n + 63) // 64, 64,
                  [Buffer("out", "float32", 3 * n, poison=np.nan, output=True),
                   Buffer("iout", "int64", 3 * n, poison=-5, output=True),
                   Scalar("int32", n)])
    np.testing.assert_array_equal(out["out"], want)
    np.testing.assert_array_equal(out["iout"], iwant)
