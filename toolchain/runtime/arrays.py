"""What a pointer parameter is given: an array object -> (address, dtype, device, contiguous).

Each argument's type is classified once (per Python type) into an extractor; a launch then
costs one dict look-up and one call per pointer argument. Protocols, in the order tried:
mettle's own DeviceArray; torch tensors and CuPy arrays read directly (their
`__cuda_array_interface__` is built in Python and costs microseconds); any other object with
`__cuda_array_interface__` (Numba, JAX, PyCUDA...); any object with `__dlpack__` and
`__dlpack_device__` (the DLTensor is read through ctypes, its capsule left to its owner).
Host arrays (NumPy, CPU tensors) are recognised so that the error can say what to do.

An extractor returns (address, dtype name or None when unknown, device ordinal, contiguous,
is_torch); the device ordinal is HOST for host memory and UNKNOWN when the protocol does not
say (then the caller asks the driver).
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable

HOST, UNKNOWN = -1, -2
DLPACK_CUDA, DLPACK_CUDA_MANAGED, DLPACK_CPU, DLPACK_CUDA_HOST = 2, 13, 1, 3

# __array_interface__/__cuda_array_interface__ typestr (without byte order) -> dtype name
TYPESTR = {"b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
           "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "f2": "float16",
           "f4": "float32", "f8": "float64"}
_DLPACK_KINDS = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}


class NotAnArray(TypeError):
    """The argument is no array the runtime knows how to pass (the message says what it is)."""


def _typestr_dtype(typestr: str) -> str | None:
    return TYPESTR.get(typestr[1:])


def rows_contiguous(shape, strides, itemsize: int) -> bool:
    """Whether a kernel indexing from the base pointer sees the array in row-major order:
    unit stride in the last dimension and every outer stride at least the extent of the
    one inside (dense, or rows padded to a leading dimension, as a `[:, :n]` view of a
    wider buffer). Transposed, reversed and step views are not."""
    if strides is None:
        return True
    inner = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent == 1:
            continue
        if stride < inner or (inner == itemsize and stride != itemsize):
            return False
        inner = stride * extent
    return True


_TORCH_DTYPES: dict = {}


def _torch(t):
    dtype = _TORCH_DTYPES.get(t.dtype)
    if dtype is None:
        dtype = _TORCH_DTYPES[t.dtype] = str(t.dtype).rpartition(".")[2]
    device = t.device
    contiguous = t.is_contiguous() or rows_contiguous(t.shape, t.stride(), 1)
    return (t.data_ptr(), dtype, device.index if device.type == "cuda" else HOST,
            contiguous, True)


_NUMPY_DTYPES: dict = {}


def dtype_name(dtype) -> str:
    """numpy.dtype.name, memoised: the property costs microseconds per read."""
    name = _NUMPY_DTYPES.get(dtype)
    if name is None:
        name = _NUMPY_DTYPES[dtype] = dtype.name
    return name


def _cupy(a):
    contiguous = a.flags.c_contiguous or rows_contiguous(a.shape, a.strides, a.itemsize)
    return a.data.ptr, dtype_name(a.dtype), a.device.id, contiguous, False


def _cuda_array_interface(a):
    cai = a.__cuda_array_interface__
    typestr = cai["typestr"]
    itemsize = int(typestr[2:])
    device = UNKNOWN
    dl_device = getattr(a, "__dlpack_device__", None)
    if dl_device is not None:
        kind, ordinal = dl_device()
        device = ordinal if kind in (DLPACK_CUDA, DLPACK_CUDA_MANAGED) else HOST
    return (cai["data"][0], _typestr_dtype(typestr), device,
            rows_contiguous(cai["shape"], cai.get("strides"), itemsize), False)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                        ctypes.c_char_p]


def _dlpack(a):
    """Read the DLTensor at the head of the capsule's DLManagedTensor. The capsule keeps its
    name, so its destructor still calls the producer's deleter; `a` keeps the memory alive."""
    kind, ordinal = a.__dlpack_device__()
    if kind not in (DLPACK_CUDA, DLPACK_CUDA_MANAGED):
        return 0, None, HOST, True, False
    capsule = a.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    dtype = None
    if t.dtype.lanes == 1 and t.dtype.code in _DLPACK_KINDS:
        dtype = "bool" if t.dtype.code == 6 else f"{_DLPACK_KINDS[t.dtype.code]}{t.dtype.bits}"
    shape = [t.shape[i] for i in range(t.ndim)]
    strides = [t.strides[i] for i in range(t.ndim)] if t.strides else None
    contiguous = rows_contiguous(shape, strides, 1)   # DLPack strides count elements
    return (t.data or 0) + t.byte_offset, dtype, ordinal, contiguous, False


def _host(what: str):
    def extract(a):
        raise NotAnArray(f"a host array ({what}) is not device memory: copy it with "
                         f"mettle.to_device(...) (or pass a GPU tensor/array)")
    return extract


def _null(a):
    return 0, None, None, True, False


def _raw(a):
    return a.value or 0, None, None, True, False


EXTRACTORS: dict[type, Callable] = {type(None): _null, ctypes.c_void_p: _raw}
TORCH_TYPES: set[type] = set()   # the tensor types seen: their launches use torch's stream


def register(cls: type, extractor: Callable) -> None:
    EXTRACTORS[cls] = extractor


def extractor(cls: type) -> Callable:
    """The extractor for values of type `cls` (classified on first sight)."""
    found = EXTRACTORS.get(cls)
    if found is None:
        found = EXTRACTORS[cls] = _classify(cls)
        if found is _torch:
            TORCH_TYPES.add(cls)
    return found


def _classify(cls: type) -> Callable:
    module = cls.__module__.split(".")[0]
    name = f"{module}.{cls.__qualname__}"
    if module == "torch" and hasattr(cls, "data_ptr"):
        return _torch
    if module == "cupy" and cls.__qualname__ == "ndarray":
        return _cupy
    if module == "numpy":
        return _host(name)
    if hasattr(cls, "__cuda_array_interface__"):
        return _cuda_array_interface
    if hasattr(cls, "__dlpack__") and hasattr(cls, "__dlpack_device__"):
        return _dlpack
    if hasattr(cls, "__array_interface__") or hasattr(cls, "__array__"):
        return _host(name)

    def refuse(a):
        if hasattr(a, "__cuda_array_interface__"):     # set on the instance, not the class
            return _cuda_array_interface(a)
        raise NotAnArray(f"got {name}, not an array: pass a device array (mettle, torch, "
                         "CuPy, Numba, JAX, DLPack) or None for a null pointer")
    return refuse
