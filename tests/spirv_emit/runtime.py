"""CL_DEVICE_EXTENSIONS of the OpenCL devices in the trixie root, for exact-reason skips."""
from __future__ import annotations

import functools

import pytest

from tests.support.opencl import run_in_root

_INNER = ("python3 -c \"from toolchain.providers.opencl.host import OpenCL\n"
          "cl = OpenCL()\n"
          "for p in cl.platforms():\n"
          "    for d in cl.devices(p): print(cl.device_info(d, 0x1030))\"")


@functools.lru_cache(maxsize=None)
def device_extensions() -> frozenset[str]:
    """Every extension any device reports (CL_DEVICE_EXTENSIONS = 0x1030)."""
    return frozenset(run_in_root(_INNER, timeout=120).stdout.split())


def need_extension(ext: str) -> None:
    if ext not in device_extensions():
        pytest.skip(f"the OpenCL device does not report {ext} in CL_DEVICE_EXTENSIONS")
