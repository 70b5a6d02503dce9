"""`dispatch` marshalling on Windows x64: the dispatch program of tests/host/test_dispatch.py
built for x86_64-windows runs under Wine against the fake CUDA driver cross-compiled by
MinGW as nvcuda.dll (loaded with LoadLibraryA by std/gpu.windows.mettle); its driver log
must equal the x86-64 Linux build's (pointer values named in order of first appearance)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.host.cross import skip_unless_runnable
from tests.host.dispatch_cross import (check_failed_launch, check_log_equals_x86_64,
                                      check_missing_driver)
from toolchain.providers.cuda.fake import build as fake_build
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

MINGW = "x86_64-w64-mingw32-gcc"
TARGET = "x86_64-windows"


@pytest.fixture(scope="module")
def drivers(tmp_path_factory) -> dict[str, str]:
    skip_unless_runnable(TARGET)
    if shutil.which(MINGW) is None or fake_build.compiler() is None:
        pytest.skip(f"{MINGW} (gcc-mingw-w64-x86-64-win32) or cc is missing")
    out = {"x86_64-linux": str(fake_build.build(tmp_path_factory.mktemp("linux")))}
    dll = tmp_path_factory.mktemp("win") / "nvcuda.dll"
    # MinGW's own printf for the log's %zu (msvcrt.dll's predates it)
    r = subprocess.run([MINGW, "-shared", "-O1", "-std=c11", "-D__USE_MINGW_ANSI_STDIO=1",
                        "-o", str(dll), str(fake_build.SOURCE)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out[TARGET] = str(dll)
    return out


def test_dispatch_log_equals_x86_64(tmp_path, drivers):
    check_log_equals_x86_64(tmp_path, TARGET, drivers)


def test_failed_launch_exits_with_driver_code(tmp_path, drivers):
    check_failed_launch(tmp_path, TARGET, drivers)


def test_missing_driver_means_no_gpu(tmp_path, drivers):
    check_missing_driver(tmp_path, TARGET, str(tmp_path / "absent" / "nvcuda.dll"))
