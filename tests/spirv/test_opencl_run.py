"""Hand-built SPIR-V kernels execute correctly on PoCL 6 in the trixie root (real OpenCL).

Skips with the reason when tools/bootstrap/30-opencl-runtime.sh has not run (needs root).
Inputs are random and non-zero; outputs start poisoned (NaN), so a kernel that writes
nothing, or writes the wrong element, fails."""
from __future__ import annotations

import pytest

from tests.spirv.kernels import scaled_sum_module, vadd_module
from tests.support.opencl import Buf, Local, Scalar, opencl_available, run_spirv_kernel
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module", autouse=True)
def _runtime():
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)


def _rand(rng, n):
    return (rng.uniform(0.5, 4.0, n) * rng.choice([-1, 1], n)).astype(np.float32)


def test_vadd_runs_on_pocl():
    rng = np.random.default_rng(20261129)
    n = 4096 + 64
    a, b = _rand(rng, n), _rand(rng, n)
    c = np.full(n, np.nan, dtype=np.float32)
    out = run_spirv_kernel(vadd_module().assemble(), "vadd", [n], [64],
                           [Buf(a), Buf(b), Buf(c, out=True)])
    got = np.frombuffer(out[2], dtype=np.float32)
    np.testing.assert_array_equal(got, a + b)


def test_scalar_and_local_memory_arguments():
    rng = np.random.default_rng(7)
    n, local, k = 200, 32, np.float32(-1.75)
    total = 224  # rounded up to a whole number of work-groups; items >= n write nothing
    x = _rand(rng, total)
    poison = np.full(total, np.nan, dtype=np.float32)
    out = run_spirv_kernel(scaled_sum_module().assemble(), "scaled_sum", [total], [local],
                           [Buf(x), Buf(poison, out=True), Local(4 * local),
                            Scalar(n, "uint32"), Scalar(float(k), "float32")])
    got = np.frombuffer(out[1], dtype=np.float32)
    vals = np.abs(x * k).reshape(-1, local)
    expected = (vals + vals[:, ::-1]).reshape(-1)
    np.testing.assert_allclose(got[:n], expected[:n], rtol=0, atol=0)
    assert np.isnan(got[n:]).all()


def test_build_failure_reports_the_kernel_name_problem():
    with pytest.raises(RuntimeError, match="clCreateKernel"):
        run_spirv_kernel(vadd_module().assemble(), "no_such_kernel", [64], None,
                         [Buf(np.ones(64, np.float32))] * 3)
