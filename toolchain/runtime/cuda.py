"""The CUDA side of the runtime: devices, device arrays, streams, events, loaded modules and
the launch plan of each kernel.

A launch plan is built once per kernel when it is first launched: the function handle, one
ctypes cell per parameter (c_int32 for an int32, c_uint64 for a pointer...), the
`void*[n]` array pointing at the cells, and one converter per parameter. A launch then sets
each cell's value through its converter (checks included) and calls cuLaunchKernel once:
a few ctypes calls, no allocation. The driver copies the cells at launch time, so they are
reused; a kernel object is therefore not for concurrent launches from several threads.

Streams: `stream=` (a mettle.Stream, a torch or CuPy stream, anything with
`__cuda_stream__`, or a raw handle int), else torch's current stream on the kernel's device
when any argument is a torch tensor, else the legacy default stream. Launches are
asynchronous; `.numpy()`, `synchronize()` and events wait.
"""
from __future__ import annotations

import ctypes
import math
import os
import re
import threading
from ctypes import byref, c_int, c_void_p

from ..providers.cuda import driver
from . import arrays
from .convert import Bad as _Bad, argument_error, count_error, scalar_converter
from .errors import LaunchError
from .signature import SCALARS, KernelSignature, Param

CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38

_DEVICES: dict[int, "Device"] = {}


class Device:
    """One CUDA device with its primary context (shared with torch and CuPy)."""

    def __init__(self, ordinal: int):
        reason = driver.probe()
        if reason is not None:
            raise RuntimeError(f"no CUDA device to run on: {reason}")
        self.ordinal = ordinal
        self.driver = driver.Device(ordinal)

    @property
    def name(self) -> str:
        return self.driver.name

    @property
    def compute_capability(self) -> tuple[int, int]:
        return self.driver.compute_capability

    def attribute(self, attr: int) -> int:
        return self.driver.attribute(attr)

    def synchronize(self) -> None:
        self.activate()
        self.driver.synchronize()

    def activate(self) -> None:
        """Make this device's context current on this thread (CUDA keeps one per thread)."""
        if getattr(_THREAD, "device", None) is not self:
            driver.call("cuCtxSetCurrent", self.driver.context)
            _THREAD.device = self

    def __repr__(self) -> str:
        return f"<mettle.Device {self.ordinal}: {self.name}>"


_THREAD = threading.local()   # .device: the Device whose context is current on this thread


def device(ordinal: int = 0) -> Device:
    """The runtime's Device for CUDA device `ordinal`, its primary context current on this
    thread."""
    found = _DEVICES.get(ordinal)
    if found is None:
        found = _DEVICES[ordinal] = _THREAD.device = Device(ordinal)
    else:
        found.activate()
    return found


def reset() -> None:
    """Forget every Device (and the driver library), so the next use re-reads
    METTLE_CUDA_DRIVER; for tests that switch between fake drivers."""
    _DEVICES.clear()
    _THREAD.__dict__.clear()
    from . import bench
    bench._FLUSH.clear()
    driver.reset()


def synchronize(ordinal: int = 0) -> None:
    """Wait for all work on the device."""
    device(ordinal).synchronize()


# ---- streams and events ------------------------------------------------------------------


class Stream:
    """A CUDA stream (cuStreamCreate). `.handle` is the CUstream as an int."""

    def __init__(self, device_ordinal: int = 0, handle: int | None = None):
        self.device = device(device_ordinal)
        if handle is None:
            h = c_void_p()
            driver.call("cuStreamCreate", byref(h), 0)
            handle, self._owned = h.value or 0, True
        else:
            self._owned = False
        self.handle = handle
        self.cell = c_void_p(handle) if handle else None   # as cuLaunchKernel takes it

    def synchronize(self) -> None:
        driver.call("cuStreamSynchronize", self.handle)

    def wait(self, event: "Event") -> None:
        """Later work on this stream waits for `event`."""
        driver.call("cuStreamWaitEvent", self.handle, event.handle, 0)

    def close(self) -> None:
        if self._owned and self.handle:
            driver.call("cuStreamDestroy", self.handle)
        self.handle, self.cell = 0, None

    def __cuda_stream__(self):
        return (0, self.handle)

    def __repr__(self) -> str:
        return f"<mettle.Stream 0x{self.handle:x}>"


def stream_handle(stream) -> int | None:
    """The CUstream of a mettle, torch or CuPy stream, a `__cuda_stream__` object or an int."""
    if stream is None or isinstance(stream, int):
        return stream
    if isinstance(stream, Stream):
        return stream.handle
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        return int(value[1])
    for attr in ("cuda_stream", "ptr", "handle"):        # torch, CuPy, others
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"stream: expected a mettle.Stream, a torch or CuPy stream or a CUstream "
                    f"handle, got {type(stream).__name__}")


class Event:
    """A CUDA event, for timing and ordering work across streams."""

    def __init__(self):
        self.handle = c_void_p()
        driver.call("cuEventCreate", byref(self.handle), 0)
        self._generation = driver.generation()

    def record(self, stream=None) -> "Event":
        driver.call("cuEventRecord", self.handle, stream_handle(stream))
        return self

    def synchronize(self) -> None:
        driver.call("cuEventSynchronize", self.handle)

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds from this event to `end` (waits for `end`)."""
        end.synchronize()
        ms = ctypes.c_float()
        driver.call("cuEventElapsedTime", byref(ms), self.handle, end.handle)
        return ms.value

    def __del__(self):
        try:      # not through a library opened after this event's (tests switch drivers)
            if self.handle and self._generation == driver.generation():
                driver.call("cuEventDestroy", self.handle)
        except Exception:   # interpreter shutdown, a poisoned context: nothing to do
            pass


# ---- device arrays -------------------------------------------------------------------------


class DeviceArray:
    """A C-contiguous array in device memory: what `mettle.to_device(numpy_array)` returns.
    It speaks `__cuda_array_interface__` (torch.as_tensor, CuPy and Numba take it)."""

    def __init__(self, shape, dtype, device_ordinal: int = 0):
        import numpy as np
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list))
                                            else (shape,)))
        self.dtype = np.dtype(dtype)
        self.dtype_name = self.dtype.name
        self.device = device(device_ordinal)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        self._buffer = self.device.driver.alloc(self.nbytes)
        self._generation = driver.generation()
        self.ptr = self._buffer.ptr

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __dlpack_device__(self):
        return (arrays.DLPACK_CUDA, self.device.ordinal)

    def copy_from(self, host) -> "DeviceArray":
        """Copy a host array of the same size in (synchronous)."""
        import numpy as np
        data = np.ascontiguousarray(host, dtype=self.dtype)
        if data.nbytes != self.nbytes:
            raise ValueError(f"copy_from: {data.nbytes} bytes into a {self.nbytes}-byte array")
        self.device.driver.upload(self._buffer, data)
        return self

    def numpy(self):
        """The contents as a new NumPy array; waits for work on the default stream (and every
        blocking stream) first, as cuMemcpyDtoH does."""
        import numpy as np
        out = np.empty(self.shape, self.dtype)
        self.device.driver.download(self._buffer, out)
        return out

    def free(self) -> None:
        if self._buffer.ptr and self._generation == driver.generation():
            self._buffer.free()
        self._buffer.ptr = self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<mettle.DeviceArray {self.shape} {self.dtype} on device {self.device.ordinal}>"


def _device_array(a):
    return a.ptr, a.dtype_name, a.device.ordinal, True, False


arrays.register(DeviceArray, _device_array)


def to_device(host, device: int = 0) -> DeviceArray:
    """A device copy of a host array (anything numpy.ascontiguousarray takes)."""
    import numpy as np
    data = np.ascontiguousarray(host)
    return DeviceArray(data.shape, data.dtype, device).copy_from(data)


def empty(shape, dtype="float32", device: int = 0) -> DeviceArray:
    return DeviceArray(shape, dtype, device)


def zeros(shape, dtype="float32", device: int = 0) -> DeviceArray:
    a = DeviceArray(shape, dtype, device)
    a.device.driver.memset(a._buffer, 0)
    return a


# ---- loaded modules and kernels --------------------------------------------------------------


class LoadedModule:
    """A PTX module JIT-loaded on one device (verbose JIT log: registers and spills)."""

    def __init__(self, ptx: bytes, device_ordinal: int):
        self.device = device(device_ordinal)
        self.ptx = ptx
        self.module = self.device.driver.load_ptx(ptx, verbose=True)
        self._facts_log: str | None = None

    def function(self, symbol: str) -> driver.Function:
        return self.module.function(symbol)

    def spills(self, symbol: str) -> dict | None:
        """{stack, spill_stores, spill_loads} bytes of `symbol`. The load's verbose log has
        them unless the driver took the module from its JIT cache (then the log is empty).
        Stack and spills both live in local memory, so a kernel with no local memory has
        neither; otherwise the PTX is JIT-compiled once more, made unique so that the
        cache cannot answer, for its log."""
        found = spills_from_log(self.module.info_log, symbol)
        if found is not None:
            return found
        if self.function(symbol).attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) == 0:
            return {"stack": 0, "spill_stores": 0, "spill_loads": 0}
        if self._facts_log is None:
            unique = self.ptx + b"\n// facts %s\n" % os.urandom(8).hex().encode()
            fresh = self.device.driver.load_ptx(unique, verbose=True)
            self._facts_log = fresh.info_log
            fresh.unload()
        return spills_from_log(self._facts_log, symbol)

    def plan(self, sig: KernelSignature) -> "LaunchPlan":
        try:
            function = self.function(sig.symbol)
        except driver.CudaError as exc:
            raise LaunchError(sig.name, f"the loaded module has no entry {sig.symbol}: {exc}",
                              exc) from None
        return LaunchPlan(sig, function, self.device.ordinal)


# the driver's JIT log prefixes the figures' line with "ptxas         ." (ptxas -v does not)
_SPILLS = re.compile(r"Function properties for (\S+)\s*\n[^\n\d]*(\d+) bytes stack frame, "
                     r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def spills_from_log(log: str, symbol: str) -> dict | None:
    """{stack, spill_stores, spill_loads} bytes of `symbol` from a verbose JIT log."""
    for m in _SPILLS.finditer(log):
        if m.group(1) == symbol:
            return {"stack": int(m.group(2)), "spill_stores": int(m.group(3)),
                    "spill_loads": int(m.group(4))}
    return None


def _pointer_converter(param: Param, device_ordinal: int):
    want, accepted = param.dtype, param.dtypes
    known, classify = arrays.EXTRACTORS, arrays.extractor

    def convert(value):
        try:
            ptr, dtype, dev, contiguous, _ = (known.get(type(value)) or
                                              classify(type(value)))(value)
        except arrays.NotAnArray as exc:
            raise _Bad(TypeError if "not an array" in str(exc) else ValueError, str(exc))
        except Exception as exc:  # noqa: BLE001  a library's interface refusing (a CPU array)
            raise _Bad(ValueError, f"cannot read the device address of this "
                       f"{type(value).__name__} ({type(exc).__name__}: {exc})") from None
        if dev is None:               # None or a raw c_void_p address: taken as given
            return ptr
        if dev != device_ordinal:
            if dev == arrays.UNKNOWN:
                dev = _pointer_device(ptr)
            if dev == arrays.HOST:
                raise _Bad(ValueError, "the array is in host memory, not on a CUDA device: "
                           "copy it with mettle.to_device(...)")
            if dev != device_ordinal:
                raise _Bad(ValueError, f"the array is on device {dev}, the kernel on device "
                           f"{device_ordinal}")
        if accepted is not None and dtype not in accepted:
            raise _Bad(TypeError, f"expected an array of {want}, got {dtype or 'unknown dtype'}")
        if not contiguous:
            raise _Bad(ValueError, "the array is not row-major (a transposed or step view): "
                       "kernels index raw memory from its base; pass a contiguous copy "
                       "(.contiguous(), numpy.ascontiguousarray)")
        return ptr
    return convert


def _pointer_device(ptr: int) -> int:
    """The device ordinal of a device address, HOST when the driver does not know it."""
    ordinal = c_int()
    try:
        driver.call("cuPointerGetAttribute", byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                    ptr)
    except driver.CudaError:
        return arrays.HOST
    return ordinal.value


def _cell(param: Param):
    if param.kind == "pointer":
        return ctypes.c_uint64()
    return SCALARS[param.type][0]()


def _unprototyped_launch():
    """cuLaunchKernel without argtypes: ctypes then converts the ints (dims, shared bytes)
    directly instead of through c_uint.from_param, which costs about 3 us of a launch. Every
    other argument is passed as a ctypes object (c_void_p handles, the params array), so
    nothing is truncated to a C int. `dll[name]` is a fresh function object, so the
    prototyped one that driver.call uses keeps its argtypes."""
    fn = driver.library().dll["cuLaunchKernel"]
    fn.restype = ctypes.c_int
    return fn


_STREAM_CELLS: dict[int, c_void_p] = {}


def _stream_cell(handle: int | None) -> c_void_p | None:
    """A CUstream as the c_void_p cuLaunchKernel takes (memoised per handle)."""
    if not handle:
        return None
    cell = _STREAM_CELLS.get(handle)
    if cell is None:
        if len(_STREAM_CELLS) > 1024:
            _STREAM_CELLS.clear()
        cell = _STREAM_CELLS[handle] = c_void_p(handle)
    return cell


def _torch_current_stream(ordinal: int) -> int:
    import torch  # pants: no-infer-dep
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(ordinal)
    return torch.cuda.current_stream(ordinal).cuda_stream


class LaunchPlan:
    """Everything a launch of one kernel needs, computed once (see the module docstring)."""

    def __init__(self, sig: KernelSignature, function: driver.Function, device_ordinal: int):
        self.sig, self.name, self.device = sig, sig.name, device_ordinal
        self.device_object = _DEVICES[device_ordinal]
        self.function = function
        self.handle = function.handle
        unsupported = [p for p in sig.params if p.kind not in ("pointer", "scalar")]
        if unsupported:    # kernels take scalars and pointers (E0302); a newer compiler?
            raise LaunchError(sig.name, f"parameter `{unsupported[0].name}` has type "
                              f"{unsupported[0].type}, which this runtime cannot pass")
        self.cells = [_cell(p) for p in sig.params]
        self.converters = [_pointer_converter(p, device_ordinal) if p.kind == "pointer"
                           else scalar_converter(p) for p in sig.params]
        self.slots = list(zip(self.cells, self.converters))
        addresses = [ctypes.addressof(c) for c in self.cells]
        self.params = (c_void_p * len(addresses))(*addresses) if addresses else None
        self.pointer_params = any(p.kind == "pointer" for p in sig.params)
        self.count = len(sig.params)
        self.launch_kernel = _unprototyped_launch()
        self.max_shared_set = driver.STATIC_SHARED_LIMIT

    def launch(self, dims: tuple, args: tuple, shared: int, stream) -> None:
        if len(args) != self.count:
            raise count_error(self.sig, len(args))
        index = 0
        try:
            for (cell, convert), value in zip(self.slots, args):
                cell.value = convert(value)
                index += 1
        except _Bad as bad:
            raise argument_error(self.sig, index, bad) from None
        if stream is None:
            if self.pointer_params and not arrays.TORCH_TYPES.isdisjoint(map(type, args)):
                stream = _stream_cell(_torch_current_stream(self.device))
        elif type(stream) is Stream:
            stream = stream.cell
        else:
            stream = _stream_cell(stream_handle(stream))
        if shared > self.max_shared_set:
            self.opt_in_shared(shared)
        if getattr(_THREAD, "device", None) is not self.device_object:
            self.device_object.activate()     # another device's, or another thread
        rc = self.launch_kernel(self.handle, *dims, shared, stream, self.params, None)
        if rc != 0:
            name, text = driver.error_text(rc)
            raise LaunchError(self.name, f"cuLaunchKernel failed: {name} ({rc}): {text}",
                              driver.CudaError("cuLaunchKernel", rc, name, text))

    def opt_in_shared(self, shared: int) -> None:
        try:
            driver.call("cuFuncSetAttribute", self.handle,
                        driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        except driver.CudaError as exc:
            raise LaunchError(self.name, f"{shared} bytes of dynamic shared memory refused: "
                              f"{exc}", exc) from None
        self.max_shared_set = shared

