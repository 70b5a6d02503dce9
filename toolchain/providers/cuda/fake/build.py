"""Build the fake CUDA driver (fake_cuda.c) into a shared library, for tests only.

The toolchain itself never needs a C compiler; tests that exercise host programs or
driver.py without a GPU call `build(out_dir)` and point METTLE_CUDA_DRIVER (Python) or the
loader (host executables) at the result. The compiler is $CC, else `cc`.

    python -m toolchain.providers.cuda.fake.build OUT_DIR   # prints the library path
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("fake_cuda.c")
LIBRARY_NAME = "libcuda.so.1"  # the soname host programs linked with -lcuda look for


class FakeDriverBuildError(RuntimeError):
    """No C compiler, or it rejected fake_cuda.c (the message carries its output)."""


def compiler() -> str | None:
    """The C compiler to use, or None when there is none on PATH."""
    return shutil.which(os.environ.get("CC") or "cc")


def build(out_dir: str | os.PathLike, name: str = LIBRARY_NAME) -> Path:
    """Compile fake_cuda.c into out_dir/name and return its path."""
    if not SOURCE.is_file():  # e.g. a Pants sandbox whose BUILD does not declare the .c file
        raise FakeDriverBuildError(f"{SOURCE} is missing: declare fake_cuda.c as a resource")
    cc = compiler()
    if cc is None:
        raise FakeDriverBuildError("no C compiler: set CC or put cc on PATH")
    out = Path(out_dir) / name
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [cc, "-shared", "-fPIC", "-O1", "-std=c11", "-Wall", "-Wl,-soname," + name,
               "-o", str(out), str(SOURCE)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise FakeDriverBuildError(f"{' '.join(command)} failed ({result.returncode}):\n"
                                   f"{result.stdout}{result.stderr}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m toolchain.providers.cuda.fake.build OUT_DIR", file=sys.stderr)
        return 2
    try:
        print(build(argv[0]))
    except FakeDriverBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
