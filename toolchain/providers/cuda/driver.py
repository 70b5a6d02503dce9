"""A small ctypes binding of the CUDA Driver API, and Device/Module/Function objects on it.

The library is libcuda.so.1, or the path in env METTLE_CUDA_DRIVER (the fake driver of
`fake/` for tests without a GPU). Invariants:
- Importing this module loads nothing; the library is opened on the first call.
- Every driver call goes through `call()`, which checks the CUresult and raises
  `CudaError(function, code, name, text)` on anything but CUDA_SUCCESS.
- Each function's argument types are declared once, in `_SIGNATURES`; a name maps to a
  list of exported symbols tried in order (cuda.h aliases such as cuEventElapsedTime_v2).
- One faulting kernel poisons the context of its process: callers that must survive
  bad kernels run them in a subprocess (tests/gpu/runner.py does).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p

from .launch import dim3, pack_params

DEFAULT_LIBRARY = "libcuda.so.1"
ENV_LIBRARY = "METTLE_CUDA_DRIVER"

CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
CU_JIT_LOG_VERBOSE = 12   # the info log then has ptxas' registers/spills per function
JIT_LOG_BYTES = 16384

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
STATIC_SHARED_LIMIT = 48 * 1024  # above this, dynamic shared memory must be opted into

_P = c_void_p  # opaque handles: CUcontext, CUmodule, CUfunction, CUstream, CUevent
# name -> (symbols tried in order, argtypes). Every restype is CUresult (int).
_SIGNATURES: dict[str, tuple[tuple[str, ...], list]] = {
    "cuInit": (("cuInit",), [c_uint]),
    "cuDriverGetVersion": (("cuDriverGetVersion",), [POINTER(c_int)]),
    "cuDeviceGet": (("cuDeviceGet",), [POINTER(c_int), c_int]),
    "cuDeviceGetCount": (("cuDeviceGetCount",), [POINTER(c_int)]),
    "cuDeviceGetAttribute": (("cuDeviceGetAttribute",), [POINTER(c_int), c_int, c_int]),
    "cuDeviceGetName": (("cuDeviceGetName",), [c_char_p, c_int, c_int]),
    "cuDeviceGetUuid": (("cuDeviceGetUuid_v2", "cuDeviceGetUuid"), [c_void_p, c_int]),
    "cuDevicePrimaryCtxRetain": (("cuDevicePrimaryCtxRetain",), [POINTER(_P), c_int]),
    "cuDevicePrimaryCtxRelease": (
        ("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"), [c_int]),
    "cuCtxSetCurrent": (("cuCtxSetCurrent",), [_P]),
    "cuCtxSynchronize": (("cuCtxSynchronize",), []),
    "cuModuleLoadDataEx": (("cuModuleLoadDataEx",),
                           [POINTER(_P), c_void_p, c_uint, POINTER(c_int), POINTER(c_void_p)]),
    "cuModuleGetFunction": (("cuModuleGetFunction",), [POINTER(_P), _P, c_char_p]),
    "cuModuleUnload": (("cuModuleUnload",), [_P]),
    "cuMemAlloc": (("cuMemAlloc_v2",), [POINTER(c_uint64), c_size_t]),
    "cuMemFree": (("cuMemFree_v2",), [c_uint64]),
    "cuMemcpyHtoD": (("cuMemcpyHtoD_v2",), [c_uint64, c_void_p, c_size_t]),
    "cuMemcpyDtoH": (("cuMemcpyDtoH_v2",), [c_void_p, c_uint64, c_size_t]),
    "cuMemsetD8": (("cuMemsetD8_v2",), [c_uint64, ctypes.c_ubyte, c_size_t]),
    "cuLaunchKernel": (("cuLaunchKernel",), [_P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
                                             c_uint, _P, c_void_p, c_void_p]),
    "cuEventCreate": (("cuEventCreate",), [POINTER(_P), c_uint]),
    "cuEventRecord": (("cuEventRecord",), [_P, _P]),
    "cuEventSynchronize": (("cuEventSynchronize",), [_P]),
    "cuEventElapsedTime": (("cuEventElapsedTime_v2", "cuEventElapsedTime"),
                           [POINTER(c_float), _P, _P]),
    "cuEventDestroy": (("cuEventDestroy_v2",), [_P]),
    "cuFuncGetAttribute": (("cuFuncGetAttribute",), [POINTER(c_int), c_int, _P]),
    "cuFuncSetAttribute": (("cuFuncSetAttribute",), [_P, c_int, c_int]),
    "cuGetErrorName": (("cuGetErrorName",), [c_int, POINTER(c_char_p)]),
    "cuGetErrorString": (("cuGetErrorString",), [c_int, POINTER(c_char_p)]),
    "cuStreamCreate": (("cuStreamCreate",), [POINTER(_P), c_uint]),
    "cuStreamDestroy": (("cuStreamDestroy_v2",), [_P]),
    "cuStreamSynchronize": (("cuStreamSynchronize",), [_P]),
    "cuStreamWaitEvent": (("cuStreamWaitEvent",), [_P, _P, c_uint]),
    "cuMemcpyHtoDAsync": (("cuMemcpyHtoDAsync_v2",), [c_uint64, c_void_p, c_size_t, _P]),
    "cuMemcpyDtoHAsync": (("cuMemcpyDtoHAsync_v2",), [c_void_p, c_uint64, c_size_t, _P]),
    "cuPointerGetAttribute": (("cuPointerGetAttribute",), [c_void_p, c_int, c_uint64]),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (
        ("cuOccupancyMaxActiveBlocksPerMultiprocessor",), [POINTER(c_int), _P, c_int, c_size_t]),
    "cuTensorMapEncodeTiled": (("cuTensorMapEncodeTiled",),
                               [c_void_p, c_int, c_uint, c_void_p, c_void_p, c_void_p,
                                c_void_p, c_void_p, c_int, c_int, c_int, c_int]),
}


class DriverUnavailable(OSError):
    """The driver library could not be opened (no libcuda.so.1, bad METTLE_CUDA_DRIVER)."""


class CudaError(RuntimeError):
    """A driver call returned something other than CUDA_SUCCESS."""

    def __init__(self, function: str, code: int, name: str, text: str, log: str = ""):
        self.function, self.code, self.name, self.text, self.log = function, code, name, text, log
        message = f"{function} failed: {name} ({code}): {text}"
        if log:
            message += f"\n--- JIT log ---\n{log.rstrip()}"
        super().__init__(message)


class _Library:
    """The opened driver plus its resolved, typed functions (resolved on first use)."""

    def __init__(self, path: str):
        try:
            self.dll = ctypes.CDLL(path)
        except OSError as exc:
            raise DriverUnavailable(f"no {path} ({exc})") from None
        self.path = path
        self.functions: dict[str, object] = {}

    def function(self, name: str):
        fn = self.functions.get(name)
        if fn is None:
            symbols, argtypes = _SIGNATURES[name]
            fn = _first_symbol(self.dll, symbols, self.path)
            fn.argtypes, fn.restype = argtypes, c_int
            self.functions[name] = fn
        return fn


def _first_symbol(dll: ctypes.CDLL, symbols: tuple[str, ...], path: str):
    for symbol in symbols:
        try:
            return getattr(dll, symbol)
        except AttributeError:
            continue
    raise DriverUnavailable(f"{path} exports none of {', '.join(symbols)}")


_LIBRARY: _Library | None = None


def library() -> _Library:
    """Open the driver on first use (METTLE_CUDA_DRIVER, else libcuda.so.1)."""
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = _Library(os.environ.get(ENV_LIBRARY) or DEFAULT_LIBRARY)
    return _LIBRARY


_GENERATION = 0   # bumped by reset(): objects made before it must not call the new library


def reset() -> None:
    """Forget the opened library so the next call re-reads METTLE_CUDA_DRIVER (tests)."""
    global _LIBRARY, _INITIALISED, _GENERATION
    _LIBRARY, _INITIALISED = None, False
    _GENERATION += 1


def generation() -> int:
    """Which opening of the library this is; a finalizer compares it before freeing."""
    return _GENERATION


def error_text(code: int) -> tuple[str, str]:
    """(name, description) of a CUresult, from the driver itself when it knows the code."""
    lib = library()
    out = []
    for getter in ("cuGetErrorName", "cuGetErrorString"):
        text = c_char_p()
        try:
            rc = lib.function(getter)(code, byref(text))
        except DriverUnavailable:
            rc = -1
        out.append(text.value.decode(errors="replace") if rc == 0 and text.value else "")
    return out[0] or f"CUDA_ERROR_{code}", out[1] or "unknown error"


def call(name: str, *args, log: str = "") -> None:
    """Call driver function `name` and raise CudaError unless it returns CUDA_SUCCESS."""
    rc = library().function(name)(*args)
    if rc != 0:
        err_name, err_text = error_text(rc)
        raise CudaError(name, rc, err_name, err_text, log)


_INITIALISED = False


def init() -> None:
    """cuInit(0), once per process."""
    global _INITIALISED
    if not _INITIALISED:
        call("cuInit", 0)
        _INITIALISED = True


def driver_version() -> int:
    """cuDriverGetVersion: 1000*major + 10*minor (13000 for CUDA 13.0)."""
    value = c_int()
    call("cuDriverGetVersion", byref(value))
    return value.value


def device_count() -> int:
    init()
    value = c_int()
    call("cuDeviceGetCount", byref(value))
    return value.value


def probe() -> str | None:
    """Why no kernel can run here, or None when a CUDA device is usable.

    The reason names what is missing: "no libcuda.so.1 (...)", "cuInit failed: ...",
    "no CUDA device". Creates no context, so it is safe to call in a test collector.
    """
    try:
        library()
        init()
    except DriverUnavailable as exc:
        return str(exc)
    except CudaError as exc:
        return f"cuInit failed: {exc.name}: {exc.text}"
    try:
        count = device_count()
    except CudaError as exc:
        return f"cuDeviceGetCount failed: {exc.name}: {exc.text}"
    return None if count > 0 else "no CUDA device"



def _address(arg) -> int:
    """A device pointer from a DeviceBuffer or a plain integer address."""
    return arg.ptr if isinstance(arg, DeviceBuffer) else int(arg)


def _host_bytes(data, writable: bool) -> ctypes.Array:
    """A ctypes char array over a C-contiguous host buffer (bytes, bytearray, numpy).

    Writable buffers are shared, not copied; read-only ones are copied (uploads only).
    """
    view = memoryview(data)
    if not view.c_contiguous:
        raise ValueError("host buffer must be C-contiguous")
    view = view.cast("B")
    array_type = ctypes.c_char * len(view)
    if view.readonly:
        if writable:
            raise ValueError("download destination is read-only")
        return array_type.from_buffer_copy(view)
    return array_type.from_buffer(view)


class DeviceBuffer:
    """One cuMemAlloc allocation; `.cell()` is its 8-byte kernel-parameter cell."""

    def __init__(self, ptr: int, nbytes: int):
        self.ptr, self.nbytes = ptr, nbytes

    def cell(self) -> c_uint64:
        return c_uint64(self.ptr)

    def free(self) -> None:
        if self.ptr:
            call("cuMemFree", c_uint64(self.ptr))
            self.ptr = 0

    def __repr__(self) -> str:
        return f"DeviceBuffer(0x{self.ptr:x}, {self.nbytes} bytes)"


class Function:
    """A kernel entry point of a loaded module."""

    def __init__(self, module: "Module", name: str, handle: c_void_p):
        self.module, self.name, self.handle = module, name, handle

    def attribute(self, attr: int) -> int:
        value = c_int()
        call("cuFuncGetAttribute", byref(value), attr, self.handle)
        return value.value

    @property
    def num_regs(self) -> int:
        return self.attribute(CU_FUNC_ATTRIBUTE_NUM_REGS)

    def launch(self, grid, block, args, shared: int = 0, stream=None) -> None:
        """cuLaunchKernel(grid, block, shared bytes, stream, cells of `args`); async."""
        gx, gy, gz = dim3(grid, "grid")
        bx, by, bz = dim3(block, "block")
        params = pack_params(args)
        if shared > STATIC_SHARED_LIMIT:
            call("cuFuncSetAttribute", self.handle,
                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        call("cuLaunchKernel", self.handle, gx, gy, gz, bx, by, bz, shared, stream,
             params.as_argument(), None)


class Module:
    """A module JIT-compiled from PTX; `info_log` holds the JIT's informational output."""

    def __init__(self, handle: c_void_p, info_log: str):
        self.handle, self.info_log = handle, info_log
        self._functions: dict[str, Function] = {}

    def function(self, name: str) -> Function:
        if name not in self._functions:
            handle = c_void_p()
            call("cuModuleGetFunction", byref(handle), self.handle, name.encode())
            self._functions[name] = Function(self, name, handle)
        return self._functions[name]

    def unload(self) -> None:
        if self.handle:
            call("cuModuleUnload", self.handle)
            self.handle = None


class Event:
    """A CUDA event for timing work on a stream (None = the default stream)."""

    def __init__(self):
        self.handle = c_void_p()
        call("cuEventCreate", byref(self.handle), 0)

    def record(self, stream=None) -> None:
        call("cuEventRecord", self.handle, stream)

    def synchronize(self) -> None:
        call("cuEventSynchronize", self.handle)

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds from this event to `end`; both must have completed."""
        ms = c_float()
        call("cuEventElapsedTime", byref(ms), self.handle, end.handle)
        return ms.value

    def destroy(self) -> None:
        if self.handle:
            call("cuEventDestroy", self.handle)
            self.handle = None


def _load_module(image: bytes, verbose: bool = False) -> Module:
    """cuModuleLoadDataEx with error and info log buffers; a failure carries the error log.
    `verbose`: the info log reports each function's registers and spills."""
    error_log = ctypes.create_string_buffer(JIT_LOG_BYTES)
    info_log = ctypes.create_string_buffer(JIT_LOG_BYTES)
    count = 5 if verbose else 4
    options = (c_int * count)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              *([CU_JIT_LOG_VERBOSE] if verbose else []))
    values = (c_void_p * count)(ctypes.addressof(error_log), JIT_LOG_BYTES,
                                ctypes.addressof(info_log), JIT_LOG_BYTES,
                                *([1] if verbose else []))
    source = ctypes.create_string_buffer(image)  # NUL-terminated, as the JIT requires
    handle = c_void_p()
    try:
        call("cuModuleLoadDataEx", byref(handle), source, count, options, values)
    except CudaError as exc:
        log = error_log.value.decode(errors="replace")
        raise CudaError(exc.function, exc.code, exc.name, exc.text, log) from None
    return Module(handle, info_log.value.decode(errors="replace"))


class Device:
    """One CUDA device with its primary context made current on this thread."""

    def __init__(self, ordinal: int = 0):
        init()
        device = c_int()
        call("cuDeviceGet", byref(device), ordinal)
        self.ordinal, self.handle = ordinal, device.value
        self.context = c_void_p()
        call("cuDevicePrimaryCtxRetain", byref(self.context), self.handle)
        call("cuCtxSetCurrent", self.context)

    def close(self) -> None:
        """Release the primary context (idempotent)."""
        if self.context:
            call("cuDevicePrimaryCtxRelease", self.handle)
            self.context = None

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.close()
        except CudaError:
            if exc_type is None:  # a poisoned context also fails here; keep the first error
                raise

    @property
    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        call("cuDeviceGetName", buf, len(buf), self.handle)
        return buf.value.decode(errors="replace")

    @property
    def uuid(self) -> str:
        raw = ctypes.create_string_buffer(16)
        call("cuDeviceGetUuid", raw, self.handle)
        return raw.raw.hex()

    def attribute(self, attr: int) -> int:
        value = c_int()
        call("cuDeviceGetAttribute", byref(value), attr, self.handle)
        return value.value

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))

    def alloc(self, nbytes: int) -> DeviceBuffer:
        """cuMemAlloc; a zero-byte request still gets a real (1-byte) allocation."""
        ptr = c_uint64()
        call("cuMemAlloc", byref(ptr), max(int(nbytes), 1))
        return DeviceBuffer(ptr.value, int(nbytes))

    def upload(self, dst, data) -> None:
        """Copy a whole C-contiguous host buffer (bytes, numpy array...) to `dst`."""
        host = _host_bytes(data, writable=False)
        call("cuMemcpyHtoD", c_uint64(_address(dst)), host, len(host))

    def download(self, src, out=None, nbytes: int | None = None):
        """Copy device memory to host: into `out` (returned), else into a new bytearray."""
        if out is None:
            out = bytearray(src.nbytes if nbytes is None else nbytes)
        host = _host_bytes(out, writable=True)
        call("cuMemcpyDtoH", host, c_uint64(_address(src)), len(host))
        return out

    def memset(self, dst, byte: int, nbytes: int | None = None) -> None:
        count = dst.nbytes if nbytes is None else nbytes
        call("cuMemsetD8", c_uint64(_address(dst)), byte & 0xFF, count)

    def load_ptx(self, text: str | bytes, verbose: bool = False) -> Module:
        return _load_module(text.encode() if isinstance(text, str) else bytes(text), verbose)

    def synchronize(self) -> None:
        call("cuCtxSynchronize")

    def event(self) -> Event:
        return Event()
