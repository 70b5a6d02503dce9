"""`dispatch` marshalling on AArch64: the dispatch program of tests/host/test_dispatch.py is
built for aarch64-linux and run under qemu against the fake CUDA driver cross-compiled for
AArch64; its driver log must equal the x86-64 build's log (run against the x86-64 fake),
with each run's own pointer values replaced by names in order of first appearance (the
x86-64 test checks that log field by field against struct.pack)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.host.cross import run_on, skip_unless_runnable
from tests.host.dispatch_cross import (check_failed_launch, check_log_equals_x86_64,
                                      check_missing_driver)
from tests.host.support import REPO, compile_cmd
from toolchain.providers.cuda.fake import build as fake_build

CROSS_CC = "aarch64-linux-gnu-gcc"
TARGET = "aarch64-linux"


@pytest.fixture(scope="module")
def drivers(tmp_path_factory) -> dict[str, str]:
    skip_unless_runnable(TARGET)
    if shutil.which(CROSS_CC) is None or fake_build.compiler() is None:
        pytest.skip(f"{CROSS_CC} (gcc-aarch64-linux-gnu) or cc is missing")
    out = {"x86_64-linux": str(fake_build.build(tmp_path_factory.mktemp("x86")))}
    mp = pytest.MonkeyPatch()
    mp.setenv("CC", CROSS_CC)
    try:
        out[TARGET] = str(fake_build.build(tmp_path_factory.mktemp("a64")))
    finally:
        mp.undo()
    return out


def test_dispatch_log_equals_x86_64(tmp_path, drivers):
    check_log_equals_x86_64(tmp_path, TARGET, drivers)


def test_failed_launch_exits_with_driver_code(tmp_path, drivers):
    check_failed_launch(tmp_path, TARGET, drivers)


def test_missing_driver_means_no_gpu(tmp_path, drivers):
    check_missing_driver(tmp_path, TARGET, str(tmp_path / "absent" / "libcuda.so.1"))


def test_vadd_app(tmp_path, drivers):
    """The sample app (app/host.mettle) on AArch64: launch, copy back, CPU check."""
    exe = tmp_path / "vadd"
    r = subprocess.run(compile_cmd("--build", "app/host.mettle", "-o", str(exe),
                                   f"--target={TARGET}"), cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(compile_cmd("--emit-ptx", "app/kernels.mettle", "-o",
                                   str(tmp_path / "kernels.ptx"), "--gpu-arch=sm_90a"),
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = run_on(TARGET, exe, env_extra={"METTLE_CUDA_DRIVER": drivers[TARGET],
                                         "METTLE_FAKE_CUDA_LOG": str(tmp_path / "log")},
                 cwd=tmp_path)
    assert (out.returncode, out.stdout) == (0, f"vadd: OK {1 << 20} elements\n"), out.stderr
