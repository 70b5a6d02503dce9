"""The fake CUDA driver (toolchain/providers/cuda/fake) for tests of the Python runtime:
build it once per session, point the driver binding at it with a fresh call log, and read
the log back. The runtime keeps devices per process, so each use starts from a reset."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.providers.cuda.fake import build
from toolchain.runtime import cuda as runtime_cuda

ENV = ("METTLE_FAKE_CUDA_CELLS", "METTLE_FAKE_CUDA_FAIL", "METTLE_FAKE_CUDA_DEVICES",
       "METTLE_FAKE_CUDA_JIT_CACHE", "METTLE_FAKE_CUDA_LOCAL_BYTES")
# Not libcuda.so.1: once a library with that soname is loaded, every later
# dlopen("libcuda.so.1") in the process (a GPU test's probe) would get the fake.
IN_PROCESS_NAME = "libmettle-fake-cuda.so"


class CallLog:
    """The fake driver's log: one `name k=v k=v ...` line per call."""

    def __init__(self, path: Path):
        self.path = path

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def calls(self, name: str) -> list[dict[str, str]]:
        found = []
        for line in self.lines():
            head, *fields = line.split(" ")
            if head == name:
                found.append(dict(f.split("=", 1) for f in fields if "=" in f))
        return found

    def clear(self) -> None:
        if self.path.exists():
            self.path.unlink()


def build_library(tmp_path_factory) -> Path:
    if build.compiler() is None:
        pytest.skip("no C compiler (cc) to build the fake CUDA driver")
    return build.build(tmp_path_factory.mktemp("fake-cuda"), name=IN_PROCESS_NAME)


def use(library: Path, log_path: Path, monkeypatch) -> CallLog:
    """Point the driver at `library`, log to `log_path`, reset the runtime's devices."""
    monkeypatch.setenv("METTLE_CUDA_DRIVER", str(library))
    monkeypatch.setenv("METTLE_FAKE_CUDA_LOG", str(log_path))
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    runtime_cuda.reset()
    return CallLog(log_path)
