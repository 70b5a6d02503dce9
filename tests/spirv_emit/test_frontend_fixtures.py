"""The shared Mettle kernel fixtures (tests/data/kernels/*.mettle) compile through the
frontend seam (`compile_to_ir(path, gpu=True)`) and emit_spirv to modules that pass
spirv-val and compute the right results on PoCL."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.opencl import Buf, Scalar, opencl_available, run_spirv_kernel
from tests.support.spirv import validate
from toolchain.compiler.targets.spirv import emit_spirv

np = pytest.importorskip("numpy")
api = pytest.importorskip("toolchain.compiler.frontend.api")
DATA = Path(__file__).resolve().parents[1] / "data" / "kernels"
FIXTURES = sorted(p.stem for p in DATA.glob("*.mettle"))


def compile_fixture(stem: str) -> bytes:
    module, _ = api.compile_to_ir(str(DATA / f"{stem}.mettle"), gpu=True)
    spv = emit_spirv(module)
    validate(spv)
    return spv


@pytest.mark.parametrize("stem", FIXTURES)
def test_fixture_validates(stem):
    assert compile_fixture(stem)[:4] == b"\x03\x02\x23\x07"


@pytest.fixture
def runtime():
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)


def _rand(rng, n, lo=0.5, hi=4.0):
    return (rng.uniform(lo, hi, n) * rng.choice([-1, 1], n)).astype(np.float32)


def test_vadd_fixture_runs(runtime):
    rng = np.random.default_rng(21)
    n, total = 999, 1024
    a, b = _rand(rng, total), _rand(rng, total)
    c = np.full(total, np.nan, np.float32)
    out = run_spirv_kernel(compile_fixture("vadd"), "vadd", [total], [128],
                           [Buf(a), Buf(b), Buf(c, out=True), Scalar(n, "int32")])
    got = np.frombuffer(out[2], np.float32)
    np.testing.assert_array_equal(got[:n], (a + b)[:n])
    assert np.isnan(got[n:]).all()


def test_saxpy_helper_fixture_runs(runtime):
    rng = np.random.default_rng(22)
    n, total, a = 1000, 1024, np.float32(-0.75)
    x, y = _rand(rng, total), _rand(rng, total)
    out = run_spirv_kernel(compile_fixture("saxpy_helper"), "saxpy", [total], [64],
                           [Scalar(float(a), "float32"), Buf(x), Buf(y.copy(), out=True),
                            Scalar(n, "int32")])
    got = np.frombuffer(out[2], np.float32)
    np.testing.assert_array_equal(got[:n], (a * x + y)[:n])
    np.testing.assert_array_equal(got[n:], y[n:])


def test_index3d_fixture_runs_with_odd_tails(runtime):
    nx, ny, nz = 9, 5, 3
    total = nx * ny * nz
    out = run_spirv_kernel(compile_fixture("index3d"), "index3d", [12, 8, 4], [4, 4, 2],
                           [Buf(np.full(total + 4, -1, np.int32), "int32", out=True),
                            Scalar(nx, "int32"), Scalar(ny, "int32"), Scalar(nz, "int32")])
    got = np.frombuffer(out[0], np.int32)
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    want = (x + 1000 * y + 1000000 * z).reshape(-1).astype(np.int32)
    np.testing.assert_array_equal(got[:total], want)
    assert (got[total:] == -1).all()


def test_math_fixture_runs_within_opencl_precision(runtime):
    rng = np.random.default_rng(23)
    n, total = 300, 320
    x = _rand(rng, total, 0.05, 6.0)
    out = run_spirv_kernel(compile_fixture("math"), "math", [total], [64],
                           [Buf(x), Buf(np.full(7 * n + 5, np.nan, np.float32), out=True),
                            Scalar(n, "int32")])
    got = np.frombuffer(out[1], np.float32)
    v = x[:n].astype(np.float64)
    a = np.abs(v)
    rows = [np.sqrt(a), 1 / np.sqrt(a + 1), a, np.sin(v), np.cos(v), np.log(a + 1),
            np.exp(v * 0.25)]
    for r, want in enumerate(rows):   # OpenCL full-profile ulp bounds, loosely
        np.testing.assert_allclose(got[r * n:(r + 1) * n], want, rtol=4e-6, atol=1e-6,
                                   err_msg=f"row {r}")
    assert np.isnan(got[7 * n:]).all()


def test_unreachable_host_function_is_not_emitted():
    from toolchain.compiler.targets.spirv.disasm import disassemble
    text = disassemble(compile_fixture("saxpy_helper"))
    assert '"axpy"' in text and '"host_only"' not in text


OWN = Path(__file__).parent / "data"


@pytest.mark.parametrize("stem, env", [("gpu_features", "opencl2.0"),
                                       ("atomics_u64", "spv1.0")])   # Int64Atomics
def test_gpu_constructs_through_the_frontend_validate(stem, env):
    """Workgroup/private/dynamic storage, barriers, async staging, atomics and subgroups
    as the Mettle frontend lowers them (gpu.md's examples)."""
    from toolchain.compiler.targets.spirv.disasm import disassemble
    module, _ = api.compile_to_ir(str(OWN / f"{stem}.mettle"), gpu=True)
    spv = emit_spirv(module)
    validate(spv, env)
    text = disassemble(spv)
    assert ("OpCapability Int64Atomics" in text) == (env == "spv1.0")
