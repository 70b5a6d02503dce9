"""What the ELF linker needs to know about each target machine, in one record per target.

exe_layout.py, link.py and libraries.py read everything machine-specific from an `Arch`:
ELF e_machine, the program interpreter, the segment alignment, the library directories, the
PLT entry code, the dynamic relocation types, the static relocation rules and `_start`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import dynamic as dyn
from . import relocs as x86
from . import relocs_aarch64 as a64
from .elf_consts import (EM_AARCH64, EM_X86_64, R_AARCH64_ABS64, R_AARCH64_GLOB_DAT,
                         R_AARCH64_JUMP_SLOT, R_X86_64_64, R_X86_64_GLOB_DAT,
                         R_X86_64_JUMP_SLOT)

PLT_ENTRY_SIZE = dyn.PLT_ENTRY_SIZE


@dataclass(frozen=True)
class Arch:
    name: str
    machine: int
    interp: bytes
    page: int                   # segment alignment: the largest page size the target uses
    lib_dirs: tuple[str, ...]
    supported: frozenset
    got_relocs: frozenset
    abs64: int                  # the 8-byte absolute type (also its dynamic relocation)
    glob_dat: int
    jump_slot: int
    text_fill: int              # byte between functions
    plt_entry: Callable[[int, int], bytes]
    apply: Callable[..., None]  # (data, offset, type, target, addend, place)
    reloc_name: Callable[[int], str]
    call_relocs: frozenset      # types that may reach an imported function through the PLT


def _x86_apply(data, off, rtype, target, addend, place) -> None:
    x86.patch(data, off, rtype, x86.compute(rtype, target, addend, place))


def _a64_plt(entry: int, slot: int) -> bytes:
    # adrp x16, slot; ldr x17, [x16, :lo12:slot]; add x16, x16, :lo12:slot; br x17
    pages = ((slot & ~0xFFF) - (entry & ~0xFFF)) >> 12 & ((1 << 21) - 1)
    lo = slot & 0xFFF
    words = [0x90000010 | (pages & 3) << 29 | (pages >> 2) << 5,
             0xF9400211 | (lo >> 3) << 10,
             0x91000210 | lo << 10,
             0xD61F0220]
    return b"".join(w.to_bytes(4, "little") for w in words)


X86_64 = Arch(
    "x86_64-linux", EM_X86_64, b"/lib64/ld-linux-x86-64.so.2\0", 0x1000,
    ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
     "/usr/lib"),
    x86.SUPPORTED, x86.GOT_RELOCS, R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, 0xCC,
    dyn.plt_entry, _x86_apply, x86.reloc_name, frozenset(x86.PC_RELOCS))

# 64 KiB segment alignment: AArch64 kernels run with 4, 16 or 64 KiB pages.
AARCH64 = Arch(
    "aarch64-linux", EM_AARCH64, b"/lib/ld-linux-aarch64.so.1\0", 0x10000,
    ("/usr/aarch64-linux-gnu/lib", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
     "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
    a64.SUPPORTED, a64.GOT_RELOCS, R_AARCH64_ABS64, R_AARCH64_GLOB_DAT, R_AARCH64_JUMP_SLOT,
    0x00, _a64_plt, a64.apply, a64.reloc_name, a64.CALL_RELOCS)

BY_MACHINE = {EM_X86_64: X86_64, EM_AARCH64: AARCH64}
BY_NAME = {a.name: a for a in (X86_64, AARCH64)}
