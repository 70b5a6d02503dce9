"""The host program tests again, built with `-O --verify-each`: the same oracles must hold.

Each test of tests/host/{test_programs,test_arith,test_convert}.py builds its source with
`tests.host.support.build`; here that name is rebound (in the test's own module) to a build
that adds `-O --verify-each`, and the unchanged test runs. The arithmetic and conversion
sources compute on constants, so they check constant folding against what the x86-64
backend computes for the same operations. tests/host/test_isel_ir.py (IR built with the
public builder) reruns with the module optimized before `emit_object`.
"""
from __future__ import annotations

import importlib
import inspect

import pytest

# The modules this file reaches by name, imported so Pants' dependency inference puts
# them in the test sandbox too.
import tests.host.test_arith  # noqa: F401
import tests.host.test_convert  # noqa: F401
import tests.host.test_isel_ir  # noqa: F401
import tests.host.test_programs  # noqa: F401

from tests.host import support

MODULES = ("tests.host.test_programs", "tests.host.test_arith", "tests.host.test_convert")


def _tests():
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        for fname, f in sorted(vars(mod).items()):
            if fname.startswith("test_") and callable(f) and \
                    list(inspect.signature(f).parameters) == ["tmp_path"]:
                out.append(pytest.param(name, fname, id=f"{name.split('.')[-1]}::{fname}"))
    return out


def _optimized_build(tmp_path, source, name="prog", extra=(), env=None):
    return support.build(tmp_path, source, name, ("-O", "--verify-each", *extra), env)


@pytest.mark.parametrize("module, test", _tests())
def test_host_program_with_O(module, test, tmp_path, monkeypatch):
    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, "build", _optimized_build)
    getattr(mod, test)(tmp_path)


def _isel_tests():
    mod = importlib.import_module("tests.host.test_isel_ir")
    return [n for n, f in sorted(vars(mod).items()) if n.startswith("test_") and callable(f)
            and list(inspect.signature(f).parameters) == ["tmp_path"]]


@pytest.mark.parametrize("test", _isel_tests())
def test_builder_programs_with_O(test, tmp_path, monkeypatch):
    from toolchain.compiler.opt.manager import OptOptions, optimize
    mod = importlib.import_module("tests.host.test_isel_ir")
    emit = mod.emit_object

    def optimized_emit(m, *a, **k):
        optimize(m, gpu=False, options=OptOptions(verify_each=True))
        return emit(m, *a, **k)
    monkeypatch.setattr(mod, "emit_object", optimized_emit)
    getattr(mod, test)(tmp_path)
