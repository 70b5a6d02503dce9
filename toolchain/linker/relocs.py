"""x86-64 static relocation arithmetic (psABI notation: S symbol, A addend, P place,
G+GOT address of the symbol's GOT slot, L its PLT entry).

The linker decides S/L/GOT addresses; this module only computes and range-checks values and
patches bytes. Overflow raises `RelocError` naming the relocation, so the linker can report
which object and symbol caused it.
"""
from __future__ import annotations

from .elf_consts import (R_X86_64_32, R_X86_64_32S, R_X86_64_64, R_X86_64_GOTPCREL,
                         R_X86_64_GOTPCRELX, R_X86_64_NONE, R_X86_64_PC32, R_X86_64_PC64,
                         R_X86_64_PLT32, R_X86_64_REX_GOTPCRELX, RELOC_NAMES)

GOT_RELOCS = frozenset({R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX})
PC_RELOCS = frozenset({R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_PC64})
ABS_RELOCS = frozenset({R_X86_64_64, R_X86_64_32, R_X86_64_32S})
SUPPORTED = GOT_RELOCS | PC_RELOCS | ABS_RELOCS | {R_X86_64_NONE}

# rtype -> (field size in bytes, signed?)
_FIELDS = {
    R_X86_64_64: (8, None), R_X86_64_PC64: (8, None), R_X86_64_32: (4, False),
    R_X86_64_32S: (4, True), R_X86_64_PC32: (4, True), R_X86_64_PLT32: (4, True),
    R_X86_64_GOTPCREL: (4, True), R_X86_64_GOTPCRELX: (4, True),
    R_X86_64_REX_GOTPCRELX: (4, True),
}


class RelocError(ValueError):
    pass


def reloc_name(rtype: int) -> str:
    return RELOC_NAMES.get(rtype, f"relocation type {rtype}")


def compute(rtype: int, target: int, addend: int, place: int) -> int:
    """The value to store. `target` is S (absolute types), L (PLT32) or G+GOT (GOT types)."""
    if rtype in ABS_RELOCS:
        return target + addend
    return target + addend - place


def patch(data: bytearray, offset: int, rtype: int, value: int) -> None:
    """Store `value` in the relocation's field, checking that it fits."""
    if rtype == R_X86_64_NONE:
        return
    size, signed = _FIELDS[rtype]
    bits = 8 * size
    if signed is None:  # 64-bit fields wrap
        value &= (1 << bits) - 1
    elif signed and not -(1 << bits - 1) <= value < (1 << bits - 1):
        raise RelocError(f"{reloc_name(rtype)} value {value:#x} does not fit in a signed "
                         f"{bits}-bit field")
    elif not signed and not 0 <= value < (1 << bits):
        raise RelocError(f"{reloc_name(rtype)} value {value:#x} does not fit in an unsigned "
                         f"{bits}-bit field")
    data[offset:offset + size] = (value & ((1 << bits) - 1)).to_bytes(size, "little")
