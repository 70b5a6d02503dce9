"""Fixtures for the CUDA provider's CPU-side tests: the fake driver, built once per session.

`fake_cuda_lib` is the path of a freshly built fake libcuda; `fake_driver` points
toolchain.providers.cuda.driver at it, with a fresh call log, and yields a `CallLog`.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_cuda import IN_PROCESS_NAME, CallLog
from toolchain.providers.cuda import driver
from toolchain.providers.cuda.fake import build


@pytest.fixture(scope="session")
def fake_cuda_lib(tmp_path_factory) -> Path:
    if build.compiler() is None:
        pytest.skip("no C compiler (cc) to build the fake CUDA driver")
    # not named libcuda.so.1: loaded in process, that soname would answer later tests'
    # dlopen("libcuda.so.1") (tests/support/fake_cuda.py)
    return build.build(tmp_path_factory.mktemp("fake-cuda"), name=IN_PROCESS_NAME)


@pytest.fixture
def fake_log(tmp_path, monkeypatch) -> CallLog:
    path = tmp_path / "cuda-calls.log"
    monkeypatch.setenv("METTLE_FAKE_CUDA_LOG", str(path))
    for name in ("METTLE_FAKE_CUDA_CELLS", "METTLE_FAKE_CUDA_FAIL", "METTLE_FAKE_CUDA_DEVICES",
                 "METTLE_FAKE_CUDA_JIT_CACHE", "METTLE_FAKE_CUDA_LOCAL_BYTES"):
        monkeypatch.delenv(name, raising=False)
    return CallLog(path)


@pytest.fixture
def fake_driver(fake_cuda_lib, fake_log, monkeypatch) -> CallLog:
    monkeypatch.setenv(driver.ENV_LIBRARY, str(fake_cuda_lib))
    driver.reset()
    yield fake_log
    driver.reset()
