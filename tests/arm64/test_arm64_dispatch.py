"""`dispatch` marshalling on AArch64: the dispatch program of tests/host/test_dispatch.py is
built for aarch64-linux and run under qemu against the fake CUDA driver cross-compiled for
AArch64; its driver log must equal the x86-64 build's log (run against the x86-64 fake),
with each run's own pointer values replaced by names in order of first appearance (the
x86-64 test checks that log field by field against struct.pack)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.host.cross import build_for, normalized_driver_log, run_on, skip_unless_runnable
from tests.host.support import REPO, compile_cmd
from tests.host.test_dispatch import DISPATCH
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


def _run(target, exe, driver, log, extra=None):
    env = {"METTLE_CUDA_DRIVER": driver, "METTLE_FAKE_CUDA_LOG": str(log)}
    env.update(extra or {})
    return run_on(target, exe, env_extra=env)


def test_dispatch_log_equals_x86_64(tmp_path, drivers):
    logs = {}
    for target in ("x86_64-linux", TARGET):
        exe = build_for(tmp_path, DISPATCH, target, "dispatch")
        log = tmp_path / f"{target}.log"
        out = _run(target, exe, drivers[target], log)
        assert (out.returncode, out.stdout) == (0, "done\n"), out.stderr
        logs[target] = normalized_driver_log(log.read_text())
    assert logs[TARGET].count("cuLaunchKernel ") == 5
    assert logs[TARGET] == logs["x86_64-linux"]


def test_failed_launch_exits_with_driver_code(tmp_path, drivers):
    exe = build_for(tmp_path, DISPATCH, TARGET, "dispatch")
    out = _run(TARGET, exe, drivers[TARGET], tmp_path / "log.txt",
               {"METTLE_FAKE_CUDA_FAIL": "cuLaunchKernel=719"})
    assert out.returncode == 719 % 256
    assert "cuLaunchKernel failed with CUDA error 719" in out.stderr


def test_missing_driver_means_no_gpu(tmp_path, drivers):
    exe = build_for(tmp_path, DISPATCH, TARGET, "dispatch")
    out = _run(TARGET, exe, str(tmp_path / "absent" / "libcuda.so.1"), tmp_path / "log")
    assert (out.returncode, out.stdout) == (2, "no GPU\n")


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
