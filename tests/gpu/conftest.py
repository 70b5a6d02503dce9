"""The hardware suite's gate: every test under tests/gpu is marked `gpu` and skips cleanly,
with the missing piece named, when this machine cannot run a CUDA kernel.

The probe (driver.probe) only calls cuInit and cuDeviceGetCount, so it creates no CUDA
context in the pytest process; kernels themselves run in subprocesses (harness.py).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from toolchain.providers.cuda import driver

HERE = Path(__file__).resolve().parent


@cache
def unavailable_reason() -> str | None:
    """None when kernels can run here, else e.g. "no libcuda.so.1 (...)", "no CUDA device"."""
    try:
        import numpy  # noqa: F401  the harness's buffers are numpy arrays
    except ImportError:
        return "numpy is not installed"
    return driver.probe()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items, so pick out the ones under tests/gpu.
    ours = [item for item in items if HERE in Path(item.path).resolve().parents]
    if not ours:
        return
    reason = unavailable_reason()
    for item in ours:
        item.add_marker(pytest.mark.gpu)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def gpu_run():
    """harness.run_kernel: run one kernel in a fresh process, return its output buffers."""
    from tests.gpu.harness import run_kernel
    return run_kernel
