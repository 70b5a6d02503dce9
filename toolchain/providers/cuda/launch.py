"""Launch marshalling for the CUDA provider: geometry and kernel-parameter cells.

cuLaunchKernel takes `void **kernelParams`: slot i holds the address of a cell whose
width is the natural width of kernel parameter i (4 bytes for .u32/.s32/.f32, 8 for
.u64/.f64 and device pointers). This module builds those cells and the pointer array;
it never touches the driver, so it is testable without a GPU.

Invariants:
- A cell is always an explicit ctypes scalar. Plain Python ints/floats are refused,
  because guessing a width silently corrupts every following parameter.
- The returned `ParamArray` owns the cells; keep it alive until cuLaunchKernel returns
  (the driver copies the values at launch time, so not longer than that).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

# Names accepted wherever a job or test names a cell type (tests/gpu JSON jobs use them).
CELL_TYPES: dict[str, type] = {
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8,
    "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
    "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
    "ptr": ctypes.c_uint64,
}

_SCALAR_BASES = tuple(set(CELL_TYPES.values()))
MAX_DIM = 3


def make_cell(ctype_name: str, value: int | float) -> ctypes._SimpleCData:
    """Build one typed cell from a type name in CELL_TYPES and a Python value."""
    try:
        cls = CELL_TYPES[ctype_name]
    except KeyError:
        raise ValueError(f"unknown cell type {ctype_name!r}; "
                         f"expected one of {sorted(CELL_TYPES)}") from None
    return cls(value)


def dim3(value: int | tuple[int, ...] | list[int], what: str) -> tuple[int, int, int]:
    """Normalise a grid/block extent (int or up to 3 ints) to (x, y, z), all >= 1."""
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= MAX_DIM:
        raise ValueError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    if any(not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"{what} dimensions must be positive integers, got {value!r}")
    return tuple(dims) + (1,) * (MAX_DIM - len(dims))  # type: ignore[return-value]


@dataclass
class ParamArray:
    """The `void*[n]` array for cuLaunchKernel plus the cells it points into."""

    cells: list
    pointers: ctypes.Array | None

    def as_argument(self) -> ctypes.Array | None:
        """What to pass as kernelParams: NULL for a kernel without parameters."""
        return self.pointers


def to_cell(arg: object) -> ctypes._SimpleCData:
    """Accept a ctypes scalar as is, or anything with a `.cell()` (device buffers)."""
    if isinstance(arg, _SCALAR_BASES):
        return arg
    cell = getattr(arg, "cell", None)
    if callable(cell):
        return cell()
    raise TypeError(f"kernel argument {arg!r} is not a typed cell; wrap it in a ctypes scalar "
                    "such as ctypes.c_int32(n) or pass a device buffer")


def pack_params(args: list | tuple) -> ParamArray:
    """Build kernelParams from typed cells (see the module docstring)."""
    cells = [to_cell(a) for a in args]
    if not cells:
        return ParamArray(cells, None)
    pointers = (ctypes.c_void_p * len(cells))(*[ctypes.addressof(c) for c in cells])
    return ParamArray(cells, pointers)
