"""Module globals -> .data / .rodata / .bss; address initialisers are the target assembler's
8-byte absolute relocations (`asm.pointer`: R_X86_64_64, R_AARCH64_ABS64).

Placement: no initialiser -> .bss; initialised constants without addresses -> .rodata;
everything else -> .data (a constant holding addresses stays writable so imported targets can
get dynamic relocations). `init` is None, bytes (string literals, padded with zeros) or
(offset, Type, value) items: ints, floats, bools, or a Global/Function whose address is stored.
Internal globals become local symbols; exported ones global; imported ones are not emitted
(the code reaches them through the GOT).
"""
from __future__ import annotations

import struct

from ...ir.module import Function, Global, Module
from ...ir.types import FloatType, IntType


def _image(g: Global) -> tuple[bytearray, list[tuple[int, str]]]:
    size = g.value_type.size
    data = bytearray(size)
    pointers: list[tuple[int, str]] = []
    if isinstance(g.init, (bytes, bytearray)):
        data[:len(g.init)] = bytes(g.init)[:size]
        return data, pointers
    for off, t, v in g.init:
        if isinstance(v, (Global, Function)):
            pointers.append((off, v.symbol))
            continue
        if isinstance(t, FloatType):
            raw = struct.pack("<f" if t.bits == 32 else "<d", float(v))
        elif isinstance(t, IntType):
            raw = (int(v) & ((1 << t.bits) - 1)).to_bytes(t.size, "little")
        else:  # bool, null pointer, fn pointer 0
            raw = int(v or 0).to_bytes(t.size or 1, "little")
        data[off:off + len(raw)] = raw
    return data, pointers


def emit_globals(asm, module: Module) -> None:
    """Into a target's assembler (`section`, `data_symbol`, `ascii`, `pointer`, ...)."""
    for g in module.globals.values():
        if g.linkage == "import":
            continue
        local = g.linkage != "export"
        align = max(g.value_type.align, 1)
        if g.init is None:
            asm.section(".bss")
            asm.data_symbol(g.symbol, local=local, align=align)
            asm.reserve(max(g.value_type.size, 1))
            asm.end_symbol(g.symbol)
            continue
        data, pointers = _image(g)
        asm.section(".rodata" if g.constant and not pointers else ".data")
        asm.data_symbol(g.symbol, local=local, align=align)
        pos = 0
        for off, sym in sorted(pointers):
            asm.ascii(bytes(data[pos:off]))
            asm.pointer(sym)
            pos = off + 8
        asm.ascii(bytes(data[pos:]) or b"\0")
        asm.end_symbol(g.symbol)
