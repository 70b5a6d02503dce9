"""AArch64 static relocation arithmetic (AAELF64 notation: S symbol, A addend, P place,
Page(x) = x & ~0xFFF, GDAT(S) the symbol's GOT slot).

`apply` patches the instruction word or data field in place and range-checks, raising
RelocError (shared with relocs.py) naming the relocation.
"""
from __future__ import annotations

from .elf_consts import (AARCH64_RELOC_NAMES, R_AARCH64_ABS32, R_AARCH64_ABS64,
                         R_AARCH64_ADD_ABS_LO12_NC, R_AARCH64_ADR_GOT_PAGE,
                         R_AARCH64_ADR_PREL_PG_HI21, R_AARCH64_CALL26, R_AARCH64_CONDBR19,
                         R_AARCH64_JUMP26, R_AARCH64_LD64_GOT_LO12_NC,
                         R_AARCH64_LDST8_ABS_LO12_NC, R_AARCH64_LDST16_ABS_LO12_NC,
                         R_AARCH64_LDST32_ABS_LO12_NC, R_AARCH64_LDST64_ABS_LO12_NC,
                         R_AARCH64_LDST128_ABS_LO12_NC, R_AARCH64_NONE, R_AARCH64_PREL32)
from .relocs import RelocError

GOT_RELOCS = frozenset({R_AARCH64_ADR_GOT_PAGE, R_AARCH64_LD64_GOT_LO12_NC})
CALL_RELOCS = frozenset({R_AARCH64_CALL26, R_AARCH64_JUMP26})
_LDST_SHIFT = {R_AARCH64_LDST8_ABS_LO12_NC: 0, R_AARCH64_LDST16_ABS_LO12_NC: 1,
               R_AARCH64_LDST32_ABS_LO12_NC: 2, R_AARCH64_LDST64_ABS_LO12_NC: 3,
               R_AARCH64_LDST128_ABS_LO12_NC: 4, R_AARCH64_LD64_GOT_LO12_NC: 3}
SUPPORTED = GOT_RELOCS | CALL_RELOCS | frozenset(_LDST_SHIFT) | {
    R_AARCH64_NONE, R_AARCH64_ABS64, R_AARCH64_ABS32, R_AARCH64_PREL32, R_AARCH64_CONDBR19,
    R_AARCH64_ADR_PREL_PG_HI21, R_AARCH64_ADD_ABS_LO12_NC}


def reloc_name(rtype: int) -> str:
    return AARCH64_RELOC_NAMES.get(rtype, f"relocation type {rtype}")


def _signed_fits(value: int, bits: int) -> bool:
    return -(1 << bits - 1) <= value < (1 << bits - 1)


def _word(data: bytearray, off: int) -> int:
    return int.from_bytes(data[off:off + 4], "little")


def _put(data: bytearray, off: int, word: int) -> None:
    data[off:off + 4] = (word & 0xFFFFFFFF).to_bytes(4, "little")


def apply(data: bytearray, off: int, rtype: int, target: int, addend: int, place: int) -> None:
    """Patch the field at data[off] for relocation `rtype`; `target` is S, or GDAT(S) for
    the GOT types (the addend then applies to the slot address, normally 0)."""
    if rtype == R_AARCH64_NONE:
        return
    value = target + addend
    name = reloc_name(rtype)
    if rtype == R_AARCH64_ABS64:
        data[off:off + 8] = (value & (1 << 64) - 1).to_bytes(8, "little")
    elif rtype in (R_AARCH64_ABS32, R_AARCH64_PREL32):
        if rtype == R_AARCH64_PREL32:
            value -= place
        if not -(1 << 31) <= value < (1 << 32):
            raise RelocError(f"{name} value {value:#x} does not fit in 32 bits")
        data[off:off + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
    elif rtype in CALL_RELOCS or rtype == R_AARCH64_CONDBR19:
        delta = value - place
        bits = 19 if rtype == R_AARCH64_CONDBR19 else 26
        if delta % 4 or not _signed_fits(delta >> 2, bits):
            raise RelocError(f"{name} branch displacement {delta:#x} out of range")
        imm = (delta >> 2) & ((1 << bits) - 1)
        _put(data, off, _word(data, off) | (imm << 5 if bits == 19 else imm))
    elif rtype in (R_AARCH64_ADR_PREL_PG_HI21, R_AARCH64_ADR_GOT_PAGE):
        pages = ((value & ~0xFFF) - (place & ~0xFFF)) >> 12
        if not _signed_fits(pages, 21):
            raise RelocError(f"{name} page offset {pages:#x} out of range")
        pages &= (1 << 21) - 1
        word = _word(data, off) & ~(3 << 29 | 0x7FFFF << 5)
        _put(data, off, word | (pages & 3) << 29 | (pages >> 2) << 5)
    elif rtype == R_AARCH64_ADD_ABS_LO12_NC:
        _put(data, off, _word(data, off) & ~(0xFFF << 10) | (value & 0xFFF) << 10)
    elif rtype in _LDST_SHIFT:
        shift = _LDST_SHIFT[rtype]
        lo = value & 0xFFF
        if lo % (1 << shift):
            raise RelocError(f"{name} address {value:#x} is not {1 << shift}-byte aligned")
        _put(data, off, _word(data, off) & ~(0xFFF << 10) | (lo >> shift) << 10)
    else:
        raise RelocError(f"unsupported relocation {name}")
