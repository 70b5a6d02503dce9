"""The AArch64 Linux host target: IR module -> ELF64 (EM_AARCH64) relocatable object bytes.

    emit_object(module, release=False) -> bytes      (what driver.py calls)

Kernels and functions using device-only operations are skipped, as on x86-64; output is
deterministic (functions, globals and strings in module order).
"""
from __future__ import annotations

from ...ir.module import Module
from ....linker.elf_writer import write_object
from ..common.globals_data import emit_globals
from ..common.host import CStrings, host_function, optimized
from .assembler import Assembler
from .isel import FunctionSelector


def assemble_module(module: Module, allocate: bool = False) -> Assembler:
    asm = Assembler()
    cstrings = CStrings()
    selector = FunctionSelector(asm, module, cstrings, allocate)
    for fn in module.functions.values():
        if host_function(fn):
            selector.select(fn)
    emit_globals(asm, module)
    cstrings.emit(asm)
    return asm


def emit_object(module: Module, release: bool = False) -> bytes:
    """The ELF relocatable object for the host part of `module` (registers allocated in
    optimised modules)."""
    return write_object(assemble_module(module, optimized(module, release)).finish())


__all__ = ["emit_object", "assemble_module"]
