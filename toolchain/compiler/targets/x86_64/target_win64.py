"""The Windows x64 host target: IR module -> COFF object bytes (the Microsoft x64 calling
convention, abi_win64.py); `--build` links it with the linker's PE writer.

    emit_coff(module, release=False) -> bytes
"""
from __future__ import annotations

from ...ir.module import Module
from ....linker.coff import write_coff
from . import abi_win64
from .target import assemble_module, optimized


def emit_coff(module: Module, release: bool = False) -> bytes:
    return write_coff(assemble_module(module, abi_win64,
                                      optimized(module, release)).finish())


__all__ = ["emit_coff"]
