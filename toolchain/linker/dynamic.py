"""Dynamic-linking tables of an executable: .dynstr, .dynsym, .hash (SysV), PLT stubs,
.rela.dyn/.rela.plt entries and the .dynamic array.

Invariants: imported symbols appear in .dynsym sorted by name (deterministic); each has
st_shndx = SHN_UNDEF and st_value = 0. The program is linked with BIND_NOW, so PLT entries
are a single `jmp [rip + slot]` with no lazy-binding push/jmp-PLT0 sequence, and .got.plt
slots start at 0 (ld.so fills them before any code runs). .got.plt[0] holds _DYNAMIC by
convention; [1] and [2] stay 0 (reserved for lazy binding, unused).
"""
from __future__ import annotations

from dataclasses import dataclass

from .elf_consts import DYN, RELA, STB_GLOBAL, STT_FUNC, STT_OBJECT, SYM, r_info, st_info
from .elf_writer import StringTable

PLT_ENTRY_SIZE = 16
# jmp qword ptr [rip + rel32]: FF /4 with ModRM 0x25 (RIP-relative); the rest is int3 padding.
# (The linker sits below the x86-64 code generator and may not import its encoder; the PLT
# test disassembles these bytes with capstone.)
_PLT_JMP = b"\xff\x25"
_PLT_PAD = b"\xcc" * (PLT_ENTRY_SIZE - 6)
GOT_PLT_RESERVED = 3


@dataclass(frozen=True)
class Import:
    name: str
    is_function: bool
    library: str  # soname that defines it (for diagnostics and documentation)


def elf_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def dynstr_and_syms(imports: list[Import], needed: list[str], runpath: str | None):
    """(.dynstr table, .dynsym bytes, {name: dynsym index}) for the sorted imports."""
    strtab = StringTable()
    for soname in needed:
        strtab.add(soname)
    if runpath:
        strtab.add(runpath)
    out, index = bytearray(SYM.size), {}
    for i, imp in enumerate(imports, start=1):
        typ = STT_FUNC if imp.is_function else STT_OBJECT
        out += SYM.pack(strtab.add(imp.name), st_info(STB_GLOBAL, typ), 0, 0, 0, 0)
        index[imp.name] = i
    return strtab, bytes(out), index


def sysv_hash(imports: list[Import]) -> bytes:
    """The DT_HASH table over dynsym indices 1..n (index 0 is the null symbol)."""
    nchain = len(imports) + 1
    nbucket = max(1, len(imports))
    buckets, chains = [0] * nbucket, [0] * nchain
    for i, imp in enumerate(imports, start=1):
        b = elf_hash(imp.name.encode()) % nbucket
        chains[i], buckets[b] = buckets[b], i  # prepend to the bucket's chain
    words = [nbucket, nchain] + buckets + chains
    return b"".join(w.to_bytes(4, "little") for w in words)


def plt_entry(entry_addr: int, slot_addr: int) -> bytes:
    rel = slot_addr - (entry_addr + 6)
    return _PLT_JMP + rel.to_bytes(4, "little", signed=True) + _PLT_PAD


def rela(entries: list[tuple[int, int, int, int]]) -> bytes:
    """Elf64_Rela entries from (offset, dynsym index, type, addend)."""
    return b"".join(RELA.pack(off, r_info(sym, typ), add) for off, sym, typ, add in entries)


def dynamic(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(DYN.pack(tag, val) for tag, val in entries)
