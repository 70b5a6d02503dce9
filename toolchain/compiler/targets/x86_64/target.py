"""The x86-64 host target: IR module -> ELF64 relocatable object bytes.

    emit_object(module, release=False) -> bytes      (what driver.py calls)

Kernels and any function using device-only operations (helpers reachable only from kernels)
are skipped: they belong to the PTX/SPIR-V targets. Optimised modules (-O, -r) get register
allocation (regalloc.py); run-time checks belong to the frontend.
Output is deterministic: functions, globals and string constants in module order.
"""
from __future__ import annotations

from ...ir.module import Module
from ....linker.elf_writer import write_object
from . import abi_sysv
from .assembler import Assembler
from .isel import FunctionSelector
from ..common.globals_data import emit_globals
from ..common.host import CStrings as _CStrings, host_function as _host_function, optimized


def assemble_module(module: Module, abi=abi_sysv, allocate: bool = False) -> Assembler:
    """`abi`: abi_sysv (Linux) or abi_win64 (Windows); `allocate`: register allocation."""
    asm = Assembler()
    cstrings = _CStrings()
    selector = FunctionSelector(asm, module, cstrings, abi, allocate)
    for fn in module.functions.values():
        if _host_function(fn):
            selector.select(fn)
    emit_globals(asm, module)
    cstrings.emit(asm)
    return asm


def emit_object(module: Module, release: bool = False) -> bytes:
    """The ELF relocatable object for the host part of `module`."""
    return write_object(assemble_module(module, allocate=optimized(module, release)).finish())


__all__ = ["emit_object", "assemble_module", "optimized"]
