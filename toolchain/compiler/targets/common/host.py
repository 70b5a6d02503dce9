"""Host-target pieces with no machine in them: constant images, struct flattening, the
`gpu.launch` runtime ABI, which functions the host compiles, and the private C strings."""
from __future__ import annotations

import struct

from ...ir import ops as O
from ...ir.module import Const, Function, Module
from ...ir.types import I32, I64, ArrayType, FloatType, IntType, StructType, Type, ptr

# gpu.launch (LANGUAGE.md §9): mtlc_gpu_launch_checked(handle, gx, gy, gz, bx, by, bz, shared,
# stream, params, nargs); a typed launch first gets the handle from mtlc_gpu_kernel_handle.
LAUNCH = "mtlc_gpu_launch_checked"
KERNEL_HANDLE = "mtlc_gpu_kernel_handle"
LAUNCH_PARAMS = [I64, I32, I32, I32, I32, I32, I32, I32, I64, ptr(I64), I32]


def const_bits(c: Const) -> int:
    """The 64-bit register image of a scalar constant."""
    t, v = c.type, c.value
    if isinstance(t, FloatType):
        fmt = "<f" if t.bits == 32 else "<d"
        return int.from_bytes(struct.pack(fmt, float(v)), "little")
    if isinstance(t, IntType):
        return t.wrap(int(v))
    return int(v or 0)


def flatten(t: Type, base: int = 0) -> list[tuple[int, Type]]:
    """(byte offset, scalar type) of every scalar inside `t`, in address order."""
    if isinstance(t, StructType):
        out = []
        for (_, ft), off in zip(t.fields, t.offsets):
            out += flatten(ft, base + off)
        return out
    if isinstance(t, ArrayType):
        out = []
        for i in range(t.count):
            out += flatten(t.elem, base + i * t.elem.size)
        return out
    return [(base, t)]


class LaunchSlot:
    """A frame-relative scratch location used as a launch argument (its value or address)."""

    def __init__(self, offset: int, lea: bool = False) -> None:
        self.offset, self.lea = offset, lea


class RuntimeSymbolMixin:
    module: Module

    def runtime_symbol(self, name: str) -> str:
        """The link symbol of a runtime function (std/gpu may give it an internal name)."""
        fn = self.module.functions.get(name)
        return fn.symbol if fn is not None else name


def host_function(fn: Function) -> bool:
    """A function the host compiles: not a kernel, extern, or user of device-only ops."""
    if fn.is_kernel or fn.is_extern:
        return False
    return all(O.OPS[i.op].where != "device" for i in fn.instructions())


class CStrings:
    """Private NUL-terminated strings the selector needs (kernel names for typed launch)."""

    def __init__(self) -> None:
        self.labels: dict[bytes, str] = {}

    def __call__(self, data: bytes) -> str:
        return self.labels.setdefault(data, f".Lkname{len(self.labels)}")

    def emit(self, asm) -> None:
        asm.section(".rodata")
        for data, label in self.labels.items():
            asm.label(label)
            asm.ascii(data + b"\0")


def optimized(module: Module, release: bool) -> bool:
    """-O or -r: the driver marks an optimised module (`module.opt_level`)."""
    return release or getattr(module, "opt_level", 0) > 0
