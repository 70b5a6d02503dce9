"""tests/host/test_dispatch.py again with every compile (host programs and the app's kernels)
given `-O --verify-each`: `dispatch` marshalling, launch geometry and the vadd app against
the fake CUDA driver must be unchanged by the optimizer."""
from __future__ import annotations

import importlib

import pytest

from tests.host import support
from tests.host.test_dispatch import fake_driver, vadd_app  # noqa: F401 - fixtures
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

D = importlib.import_module("tests.host.test_dispatch")
pytestmark = D.pytestmark
COMPILED: list = []                 # the app compiles that went through the -O helper


@pytest.fixture(scope="module", autouse=True)
def _optimized_compiles():
    """Rebind the dispatch tests' compile helpers for this module only, then restore."""
    saved = D.build, D.compile_cmd

    def build(tmp_path, source, name="prog", extra=(), env=None):
        return support.build(tmp_path, source, name, ("-O", "--verify-each", *extra), env)

    def compile_cmd(*args):
        COMPILED.append(args)
        return support.compile_cmd(*args, "-O", "--verify-each")
    D.build, D.compile_cmd = build, compile_cmd
    yield
    D.build, D.compile_cmd = saved


@pytest.mark.parametrize("name", ["test_dispatch_cells_and_launch_arguments",
                                  "test_failed_launch_exits_with_driver_code"])
def test_dispatch_with_O(name, tmp_path, fake_driver):  # noqa: F811
    getattr(D, name)(tmp_path, fake_driver)


def test_missing_driver_with_O(tmp_path):
    D.test_missing_driver_means_no_gpu(tmp_path)


@pytest.mark.parametrize("name", ["test_vadd_app_against_fake_driver",
                                  "test_vadd_app_detects_wrong_results"])
def test_vadd_app_with_O(name, vadd_app, fake_driver, tmp_path):  # noqa: F811
    assert any("app/kernels.mettle" in a for a in COMPILED)
    getattr(D, name)(vadd_app, fake_driver, tmp_path)
