"""GPU code under `-O`: every kernel fixture assembles and validates, and the SPIR-V
execution tests give the same answers with the optimizer on.

- Every `.mettle` kernel source of the repository (tests/data, tests/spirv_emit/data, app,
  bench/kernels) compiled with `-O --verify-each`: the PTX goes through ptxas (sm_90a), the
  SPIR-V through spirv-val under the environment its unoptimized module validates with.
- tests/spirv_emit/{test_execute,test_frontend_fixtures,test_gpu_suite_opencl}.py rerun on
  PoCL with their module builders rebound to optimize first; their oracles are unchanged.
"""
from __future__ import annotations

import functools
import importlib
import inspect
from pathlib import Path

import pytest

# The modules this file reaches by name, imported so Pants' dependency inference puts
# them in the test sandbox too.
import tests.spirv_emit.test_execute  # noqa: F401
import tests.spirv_emit.test_frontend_fixtures  # noqa: F401
import tests.spirv_emit.test_gpu_suite_opencl  # noqa: F401

from tests.support.spirv import run_tool, validate
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(str(p.relative_to(REPO)) for pattern in (
    "tests/data/kernels/*.mettle", "tests/data/gpu_suite/*.mettle",
    "tests/spirv_emit/data/*.mettle", "app/*.mettle", "bench/kernels/*.mettle")
    for p in REPO.glob(pattern))


def _compile(path: str, emit: str, optimize: bool):
    opts = Options(emit=emit, gpu_arch="sm_90a", optimize=optimize, verify_each=optimize)
    try:
        return compile_file(str(REPO / path), opts).data
    except CompileError as e:
        if optimize:
            raise
        pytest.skip(f"not a {emit} program: {e.diagnostics[0].message}")


@pytest.mark.parametrize("path", SOURCES)
def test_optimized_ptx_assembles(path, ptxas):
    _compile(path, "ptx", False)
    ptxas(_compile(path, "ptx", True).decode(), "sm_90a")


@pytest.mark.parametrize("path", SOURCES)
def test_optimized_spirv_validates(path):
    plain = _compile(path, "spirv", False)
    env = "opencl2.0" if run_tool("spirv-val", plain, "--target-env",
                                  "opencl2.0").returncode == 0 else "spv1.0"
    validate(_compile(path, "spirv", True), env)


# ---- execution on PoCL, optimized ------------------------------------------------------

def _opencl():
    from tests.support.opencl import opencl_available
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)


def _optimized(module):
    from toolchain.compiler.opt.manager import OptOptions, optimize
    optimize(module, gpu=True, options=OptOptions(verify_each=True))
    return module


def _plain_tests(modname: str, params: tuple[str, ...]):
    pytest.importorskip("numpy")
    mod = importlib.import_module(modname)
    return [pytest.param(modname, n, id=n) for n, f in sorted(vars(mod).items())
            if n.startswith("test_") and callable(f) and
            tuple(inspect.signature(f).parameters) == params and
            not hasattr(f, "pytestmark")]


def _collect(modname, params):
    try:
        return _plain_tests(modname, params)
    except pytest.skip.Exception:
        return []


@pytest.mark.parametrize("modname, test", _collect("tests.spirv_emit.test_execute", ()))
def test_spirv_execution_optimized(modname, test, monkeypatch):
    _opencl()
    mod = importlib.import_module(modname)
    original = mod.build
    monkeypatch.setattr(mod, "build", lambda m, *a, **k: original(_optimized(m), *a, **k))
    getattr(mod, test)()


@pytest.mark.parametrize("modname, test", _collect("tests.spirv_emit.test_frontend_fixtures",
                                                   ("runtime",)))
def test_frontend_fixtures_optimized(modname, test, monkeypatch):
    _opencl()
    mod = importlib.import_module(modname)

    def compile_fixture(stem: str) -> bytes:
        spv = compile_file(str(mod.DATA / f"{stem}.mettle"),
                           Options(emit="spirv", optimize=True, verify_each=True)).data
        validate(spv)
        return spv
    monkeypatch.setattr(mod, "compile_fixture", compile_fixture)
    getattr(mod, test)(None)


@pytest.mark.parametrize("modname, test", _collect("tests.spirv_emit.test_gpu_suite_opencl",
                                                   ("spv",)))
def test_memory_suite_optimized(modname, test):
    _opencl()
    mod = importlib.import_module(modname)
    getattr(mod, test)(_memory_suite())


@functools.cache
def _memory_suite() -> bytes:
    mod = importlib.import_module("tests.spirv_emit.test_gpu_suite_opencl")
    spv = compile_file(str(mod.SUITE), Options(emit="spirv", optimize=True,
                                               verify_each=True)).data
    validate(spv, "spv1.0")
    return spv


def _ptx_builder_kernels():
    from tests.ptx import kernels as K
    return sorted(K.ALL)


@pytest.mark.parametrize("name", _ptx_builder_kernels())
def test_ptx_builder_kernels_optimized_assemble_everywhere(name, ptxas):
    """tests/ptx/kernels.py's IR kernels, optimized, through ptxas for every PTX profile."""
    from tests.ptx import kernels as K
    from tests.ptx.helpers import emit_and_assemble
    emit_and_assemble(lambda: _optimized(K.ALL[name]()), ptxas, gpu_checks=True)
