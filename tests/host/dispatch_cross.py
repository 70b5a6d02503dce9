"""The `dispatch` checks both other host targets run (tests/arm64/test_arm64_dispatch.py,
tests/pe/test_win64_dispatch.py): the driver log of tests/host/test_dispatch.py's program
equals the x86-64 Linux build's, a failed launch exits with the driver's code, a missing
driver means "no GPU". `drivers` maps each target to its fake CUDA driver library."""
from __future__ import annotations

from .cross import build_for, normalized_driver_log, run_on
from .test_dispatch import DISPATCH


def run_dispatch(target, exe, driver, log, extra=None):
    env = {"METTLE_CUDA_DRIVER": driver, "METTLE_FAKE_CUDA_LOG": str(log)}
    env.update(extra or {})
    return run_on(target, exe, env_extra=env)


def check_log_equals_x86_64(tmp_path, target: str, drivers: dict) -> None:
    logs = {}
    for t in ("x86_64-linux", target):
        exe = build_for(tmp_path, DISPATCH, t, "dispatch")
        log = tmp_path / f"{t}.log"
        out = run_dispatch(t, exe, drivers[t], log)
        assert (out.returncode, out.stdout) == (0, "done\n"), out.stderr
        logs[t] = normalized_driver_log(log.read_text())
    assert logs[target].count("cuLaunchKernel ") == 5
    assert logs[target] == logs["x86_64-linux"]


def check_failed_launch(tmp_path, target: str, drivers: dict) -> None:
    exe = build_for(tmp_path, DISPATCH, target, "dispatch")
    out = run_dispatch(target, exe, drivers[target], tmp_path / "log.txt",
                       {"METTLE_FAKE_CUDA_FAIL": "cuLaunchKernel=719"})
    assert out.returncode == 719 % 256     # (Windows keeps 719; Wine hands Unix its low byte)
    assert "cuLaunchKernel failed with CUDA error 719" in out.stderr


def check_missing_driver(tmp_path, target: str, missing: str) -> None:
    exe = build_for(tmp_path, DISPATCH, target, "dispatch")
    out = run_dispatch(target, exe, missing, tmp_path / "log")
    assert (out.returncode, out.stdout) == (2, "no GPU\n")
