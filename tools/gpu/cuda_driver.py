"""Minimal CUDA driver API over ctypes for the measurement collector.

libcuda.so.1 is loaded lazily on the first `Driver()`, so importing this module (and the
collector) works on machines without a GPU. Every call's CUresult is checked; a failure
raises ToolError naming the call and the driver's error name. Only the calls the collector
needs are bound. The primary context is retained and made current; it is released by
`close()`. Symbols with a `_v2` ABI are bound by that name, as cuda.h does.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

from tools.gpu.tool_io import ToolError

CU_DEVICE_ATTRIBUTE_INTEGRATED = 18
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_LOG_BYTES = 16384

# Name in the code -> candidate exported symbols, newest ABI first.
_SYMBOLS = {
    "cuInit": ("cuInit",), "cuDriverGetVersion": ("cuDriverGetVersion",),
    "cuDeviceGet": ("cuDeviceGet",), "cuDeviceGetName": ("cuDeviceGetName",),
    "cuDeviceGetAttribute": ("cuDeviceGetAttribute",),
    "cuDeviceGetUuid": ("cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
    "cuDevicePrimaryCtxRetain": ("cuDevicePrimaryCtxRetain",),
    "cuDevicePrimaryCtxRelease": ("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    "cuCtxSetCurrent": ("cuCtxSetCurrent",), "cuCtxSynchronize": ("cuCtxSynchronize",),
    "cuModuleLoadDataEx": ("cuModuleLoadDataEx",), "cuModuleUnload": ("cuModuleUnload",),
    "cuModuleGetFunction": ("cuModuleGetFunction",),
    "cuMemAlloc": ("cuMemAlloc_v2",), "cuMemFree": ("cuMemFree_v2",),
    "cuMemcpyHtoD": ("cuMemcpyHtoD_v2",), "cuMemcpyDtoH": ("cuMemcpyDtoH_v2",),
    "cuLaunchKernel": ("cuLaunchKernel",),
    "cuEventCreate": ("cuEventCreate",), "cuEventRecord": ("cuEventRecord",),
    "cuEventSynchronize": ("cuEventSynchronize",),
    "cuEventElapsedTime": ("cuEventElapsedTime_v2", "cuEventElapsedTime"),
    "cuEventDestroy": ("cuEventDestroy_v2", "cuEventDestroy"),
}


def _load_library() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise ToolError(f"cannot load the CUDA driver libcuda.so.1 ({exc}); "
                        "the collector needs an NVIDIA GPU and driver") from None


class Driver:
    """Checked wrappers over the driver calls the collector uses (device 0 by default)."""

    def __init__(self, ordinal: int = 0):
        self._lib = _load_library()
        self._fn = {name: self._bind(syms) for name, syms in _SYMBOLS.items()}
        self.call("cuInit", ctypes.c_uint(0))
        self.device = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(self.device), ctypes.c_int(ordinal))
        self.context = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(self.context), self.device)
        self.call("cuCtxSetCurrent", self.context)

    def _bind(self, symbols: tuple[str, ...]):
        for sym in symbols:
            fn = getattr(self._lib, sym, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return fn
        raise ToolError(f"libcuda.so.1 exports none of {symbols}; driver too old")

    def _error_name(self, code: int) -> str:
        name = ctypes.c_char_p()
        getter = getattr(self._lib, "cuGetErrorName", None)
        if getter is not None and getter(ctypes.c_int(code), ctypes.byref(name)) == 0:
            return name.value.decode()
        return f"CUresult {code}"

    def call(self, name: str, *args) -> None:
        code = self._fn[name](*args)
        if code != 0:
            raise ToolError(f"{name} failed: {self._error_name(code)} ({code})")

    def attribute(self, attr: int) -> int:
        out = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(out), ctypes.c_int(attr), self.device)
        return out.value

    def device_facts(self) -> dict:
        """UUID, name, compute capability, integrated flag and driver version."""
        uuid = (ctypes.c_ubyte * 16)()
        self.call("cuDeviceGetUuid", uuid, self.device)
        h = bytes(uuid).hex()
        name = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", name, ctypes.c_int(256), self.device)
        version = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(version))
        major = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        facts = {"device_uuid": f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}",
                 "device_name": name.value.decode(errors="replace"),
                 "compute_capability": f"{major}.{minor}",
                 "integrated_memory": bool(self.attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED)),
                 "driver_version": version.value}
        release = _driver_release()
        if release:
            facts["driver_release"] = release
        return facts

    def load_module(self, ptx: bytes, label: str) -> ctypes.c_void_p:
        """JIT-load PTX; a failure reports the driver's JIT error log."""
        log = ctypes.create_string_buffer(_LOG_BYTES)
        opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, _LOG_BYTES)
        module = ctypes.c_void_p()
        image = ctypes.create_string_buffer(ptx + b"\0")
        try:
            self.call("cuModuleLoadDataEx", ctypes.byref(module), image, ctypes.c_uint(2),
                      opts, vals)
        except ToolError as exc:
            raise ToolError(f"{label}: {exc}\n{log.value.decode(errors='replace')}") from None
        return module

    def get_function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(fn), module, name.encode())
        return fn

    def alloc(self, nbytes: int) -> ctypes.c_uint64:
        ptr = ctypes.c_uint64()
        self.call("cuMemAlloc", ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        return ptr

    def free(self, ptr: ctypes.c_uint64) -> None:
        self.call("cuMemFree", ptr)

    def upload(self, ptr: ctypes.c_uint64, data: bytes) -> None:
        self.call("cuMemcpyHtoD", ptr, ctypes.c_char_p(data), ctypes.c_size_t(len(data)))

    def download(self, ptr: ctypes.c_uint64, nbytes: int) -> bytes:
        out = ctypes.create_string_buffer(nbytes)
        self.call("cuMemcpyDtoH", out, ptr, ctypes.c_size_t(nbytes))
        return out.raw

    def launch(self, fn, grid, block, shared: int, params) -> None:
        self.call("cuLaunchKernel", fn, *(ctypes.c_uint(g) for g in grid),
                  *(ctypes.c_uint(b) for b in block), ctypes.c_uint(shared),
                  ctypes.c_void_p(0), params, ctypes.c_void_p(0))

    def event(self) -> ctypes.c_void_p:
        ev = ctypes.c_void_p()
        self.call("cuEventCreate", ctypes.byref(ev), ctypes.c_uint(0))
        return ev

    def record(self, ev) -> None:
        self.call("cuEventRecord", ev, ctypes.c_void_p(0))

    def elapsed_ns(self, start, end) -> int:
        self.call("cuEventSynchronize", end)
        ms = ctypes.c_float()
        self.call("cuEventElapsedTime", ctypes.byref(ms), start, end)
        return int(round(ms.value * 1e6))

    def synchronize(self) -> None:
        self.call("cuCtxSynchronize")

    def close(self) -> None:
        self.call("cuDevicePrimaryCtxRelease", self.device)


def _driver_release() -> str | None:
    """Kernel-module release (e.g. 580.159.04) from /proc, when the host exposes it."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None
