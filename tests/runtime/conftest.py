"""Fixtures of the runtime's hardware-free tests: the fake CUDA driver and a private cache."""
from __future__ import annotations

import pytest

from tests.support import fake_cuda
from toolchain.runtime import cuda as runtime_cuda


@pytest.fixture(scope="session")
def fake_cuda_lib(tmp_path_factory):
    return fake_cuda.build_library(tmp_path_factory)


@pytest.fixture
def fake_driver(fake_cuda_lib, tmp_path, monkeypatch):
    log = fake_cuda.use(fake_cuda_lib, tmp_path / "cuda-calls.log", monkeypatch)
    yield log
    runtime_cuda.reset()


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Every test compiles into its own cache directory."""
    path = tmp_path / "cache"
    monkeypatch.setenv("METTLE_CACHE_DIR", str(path))
    return path
