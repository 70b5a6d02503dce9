"""ctypes binding of the OpenCL API subset needed to run a SPIR-V kernel once.

Invariants: every CL call's status is checked and a failure raises `OpenCLError` naming the
call and the code; a failed clBuildProgram carries the build log. Handles are released by
`close()` (the CLI process is short-lived, so a missed release only leaks until exit).
Device choice: the first device whose CL_DEVICE_IL_VERSION names SPIR-V, optionally only on
platforms whose name contains $METTLE_OPENCL_PLATFORM (e.g. "rusticl", "Portable").
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import POINTER, byref, c_char_p, c_int32, c_size_t, c_uint32, c_uint64, c_void_p

CL_SUCCESS = 0
CL_DEVICE_TYPE_ALL = 0xFFFFFFFF
CL_PLATFORM_VERSION = 0x0901
CL_PLATFORM_NAME = 0x0902
CL_DEVICE_NAME = 0x102B
CL_DRIVER_VERSION = 0x102D
CL_DEVICE_VERSION = 0x102F
CL_DEVICE_IL_VERSION = 0x105B
CL_PROGRAM_BUILD_LOG = 0x1183
CL_MEM_READ_WRITE = 1 << 0
CL_MEM_COPY_HOST_PTR = 1 << 5


class OpenCLError(RuntimeError):
    """An OpenCL call failed; `code` is the CL status (negative)."""

    def __init__(self, call: str, code: int, detail: str = ""):
        self.call, self.code = call, code
        super().__init__(f"{call} failed with CL error {code}" + (f"\n{detail}" if detail else ""))


def _load() -> ctypes.CDLL:
    name = os.environ.get("METTLE_OPENCL_LIB") or ctypes.util.find_library("OpenCL")
    return ctypes.CDLL(name or "libOpenCL.so.1")


def _check(call: str, status: int) -> None:
    if status != CL_SUCCESS:
        raise OpenCLError(call, status)


class OpenCL:
    """The loaded library with argument types declared for the calls we use."""

    def __init__(self) -> None:
        lib = self.lib = _load()
        sigs = {
            "clGetPlatformIDs": [c_uint32, POINTER(c_void_p), POINTER(c_uint32)],
            "clGetPlatformInfo": [c_void_p, c_uint32, c_size_t, c_void_p, POINTER(c_size_t)],
            "clGetDeviceIDs": [c_void_p, c_uint64, c_uint32, POINTER(c_void_p),
                               POINTER(c_uint32)],
            "clGetDeviceInfo": [c_void_p, c_uint32, c_size_t, c_void_p, POINTER(c_size_t)],
            "clBuildProgram": [c_void_p, c_uint32, POINTER(c_void_p), c_char_p, c_void_p,
                               c_void_p],
            "clGetProgramBuildInfo": [c_void_p, c_void_p, c_uint32, c_size_t, c_void_p,
                                      POINTER(c_size_t)],
            "clSetKernelArg": [c_void_p, c_uint32, c_size_t, c_void_p],
            "clEnqueueNDRangeKernel": [c_void_p, c_void_p, c_uint32, POINTER(c_size_t),
                                       POINTER(c_size_t), POINTER(c_size_t), c_uint32,
                                       c_void_p, c_void_p],
            "clEnqueueReadBuffer": [c_void_p, c_void_p, c_uint32, c_size_t, c_size_t,
                                    c_void_p, c_uint32, c_void_p, c_void_p],
            "clFinish": [c_void_p],
        }
        for name, args in sigs.items():
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = c_int32
        makers = {
            "clCreateContext": [c_void_p, c_uint32, POINTER(c_void_p), c_void_p, c_void_p,
                                POINTER(c_int32)],
            "clCreateCommandQueue": [c_void_p, c_void_p, c_uint64, POINTER(c_int32)],
            "clCreateProgramWithIL": [c_void_p, c_void_p, c_size_t, POINTER(c_int32)],
            "clCreateKernel": [c_void_p, c_char_p, POINTER(c_int32)],
            "clCreateBuffer": [c_void_p, c_uint64, c_size_t, c_void_p, POINTER(c_int32)],
        }
        for name, args in makers.items():
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = c_void_p
        for name in ("clReleaseMemObject", "clReleaseKernel", "clReleaseProgram",
                     "clReleaseCommandQueue", "clReleaseContext"):
            getattr(lib, name).argtypes = [c_void_p]
            getattr(lib, name).restype = c_int32

    def make(self, name: str, *args: object) -> int:
        """Call a clCreate* function (last argument: errcode_ret) and check it."""
        err = c_int32(0)
        handle = getattr(self.lib, name)(*args, byref(err))
        _check(name, err.value)
        return handle

    def _info(self, fn: str, handle: int, param: int) -> str:
        size = c_size_t(0)
        _check(fn, getattr(self.lib, fn)(handle, param, 0, None, byref(size)))
        buf = ctypes.create_string_buffer(size.value)
        _check(fn, getattr(self.lib, fn)(handle, param, size, buf, None))
        return buf.value.decode("utf-8", "replace").strip()

    def platform_info(self, platform: int, param: int) -> str:
        return self._info("clGetPlatformInfo", platform, param)

    def device_info(self, device: int, param: int) -> str:
        return self._info("clGetDeviceInfo", device, param)

    def platforms(self) -> list[int]:
        count = c_uint32(0)
        _check("clGetPlatformIDs", self.lib.clGetPlatformIDs(0, None, byref(count)))
        ids = (c_void_p * count.value)()
        _check("clGetPlatformIDs", self.lib.clGetPlatformIDs(count, ids, None))
        return list(ids)

    def devices(self, platform: int) -> list[int]:
        count = c_uint32(0)
        status = self.lib.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, None, byref(count))
        if status != CL_SUCCESS or count.value == 0:
            return []
        ids = (c_void_p * count.value)()
        _check("clGetDeviceIDs",
               self.lib.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids, None))
        return list(ids)


def describe(cl: OpenCL) -> list[dict]:
    """One record per device: platform, versions and CL_DEVICE_IL_VERSION."""
    out = []
    for p in cl.platforms():
        for d in cl.devices(p):
            out.append({
                "platform": cl.platform_info(p, CL_PLATFORM_NAME),
                "platform_version": cl.platform_info(p, CL_PLATFORM_VERSION),
                "device": cl.device_info(d, CL_DEVICE_NAME),
                "device_version": cl.device_info(d, CL_DEVICE_VERSION),
                "driver_version": cl.device_info(d, CL_DRIVER_VERSION),
                "il_version": cl.device_info(d, CL_DEVICE_IL_VERSION),
                "handles": (p, d),
            })
    return out


def pick_device(cl: OpenCL) -> dict:
    """The first SPIR-V-capable device (filtered by $METTLE_OPENCL_PLATFORM when set)."""
    want = os.environ.get("METTLE_OPENCL_PLATFORM", "")
    found = describe(cl)
    for rec in found:
        if want.lower() in rec["platform"].lower() and "SPIR-V" in rec["il_version"]:
            return rec
    seen = "; ".join(f"{r['platform']} / {r['device']}: IL '{r['il_version']}'" for r in found)
    raise OpenCLError("pick_device", -1, f"no SPIR-V device (want '{want}'); saw: {seen or '-'}")
