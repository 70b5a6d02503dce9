"""Parse ELF64 little-endian x86-64 and AArch64 files: relocatable objects back into `ObjectFile`, and
the dynamic symbol table of shared libraries (what the linker needs to import from them).

Malformed input raises `ElfError` (a ValueError) with a message naming the file; the linker
turns it into a diagnostic. The reader never executes or maps the file.
"""
from __future__ import annotations

from dataclasses import dataclass

from .elf_consts import (DT_NEEDED, DT_NULL, DT_SONAME, DYN, EHDR, ELFMAG, EM_AARCH64, EM_X86_64,
                         ET_DYN, ET_REL, RELA, SHDR, SHN_UNDEF, SHT_DYNAMIC, SHT_DYNSYM,
                         SHT_NOBITS, SHT_NOTE, SHT_PROGBITS, SHT_RELA, SHT_SYMTAB,
                         STT_FILE, STT_SECTION, SYM)
from .objfile import ObjectFile, Reloc, Section, Symbol


class ElfError(ValueError):
    pass


@dataclass(frozen=True)
class SectionHeader:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


class ElfFile:
    """Header and section table of an ELF64 file, with helpers to read sections."""

    def __init__(self, data: bytes, path: str = "<memory>") -> None:
        self.data, self.path = bytes(data), path
        if len(data) < EHDR.size or data[:4] != ELFMAG or data[4] != 2 or data[5] != 1:
            raise ElfError(f"{path}: not a little-endian ELF64 file")
        h = EHDR.unpack_from(data)
        self.type, self.machine, self.entry = h[1], h[2], h[4]
        self.phoff, shoff, self.phnum = h[5], h[6], h[11]
        shnum, shstrndx = h[12], h[13]
        if self.machine not in (EM_X86_64, EM_AARCH64):
            raise ElfError(f"{path}: not an x86-64 or AArch64 file "
                           f"(e_machine={self.machine})")
        if shoff + shnum * SHDR.size > len(data):
            raise ElfError(f"{path}: section header table out of range")
        raw = [SHDR.unpack_from(data, shoff + i * SHDR.size) for i in range(shnum)]
        names = self._bytes(raw[shstrndx][4], raw[shstrndx][5]) if shnum else b""
        self.sections = [SectionHeader(_cstr(names, r[0]), *r[1:]) for r in raw]

    def _bytes(self, offset: int, size: int) -> bytes:
        if offset + size > len(self.data):
            raise ElfError(f"{self.path}: section data out of range")
        return self.data[offset:offset + size]

    def content(self, sh: SectionHeader) -> bytes:
        return b"" if sh.type == SHT_NOBITS else self._bytes(sh.offset, sh.size)

    def symbols(self, sh: SectionHeader) -> list[tuple[str, int, int, int, int, int]]:
        """(name, info, other, shndx, value, size) for every entry of a symbol table."""
        raw, strs = self.content(sh), self.content(self.sections[sh.link])
        rows = [SYM.unpack_from(raw, o) for o in range(0, len(raw), SYM.size)]
        return [(_cstr(strs, r[0]),) + r[1:] for r in rows]


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", "replace")


_KEPT = (SHT_PROGBITS, SHT_NOBITS, SHT_NOTE)


def read_object(data: bytes, path: str = "<memory>") -> ObjectFile:
    """Parse an ET_REL object into the in-memory model (round-trips `write_object`)."""
    elf = ElfFile(data, path)
    if elf.type != ET_REL:
        raise ElfError(f"{path}: not a relocatable object (e_type={elf.type})")
    obj = ObjectFile(name=path, machine=elf.machine)
    for sh in elf.sections[1:]:
        if sh.type in _KEPT and sh.name != ".note.GNU-stack":
            sec = Section(sh.name, sh.type, sh.flags, sh.align or 1)
            if sh.type == SHT_NOBITS:
                sec.nobits_size = sh.size
            else:
                sec.data = bytearray(elf.content(sh))
            obj.sections[sh.name] = sec
    symtab = next((sh for sh in elf.sections if sh.type == SHT_SYMTAB), None)
    names = _read_symbols(elf, symtab, obj) if symtab else []
    for sh in elf.sections:
        if sh.type == SHT_RELA:
            _read_relocs(elf, sh, names, obj)
    return obj


def _read_symbols(elf: ElfFile, symtab: SectionHeader, obj: ObjectFile) -> list[str]:
    names = [""]
    for name, info, _other, shndx, value, size in elf.symbols(symtab)[1:]:
        typ, bind = info & 0xF, info >> 4
        if typ == STT_FILE:  # source file names (gas/gcc objects) carry no address
            names.append(name)
            continue
        section = None
        if shndx != SHN_UNDEF and shndx < len(elf.sections):
            section = elf.sections[shndx].name
        elif shndx != SHN_UNDEF:
            raise ElfError(f"{elf.path}: symbol '{name}' has unsupported section {shndx:#x}")
        if typ == STT_SECTION:
            name = section or ""
        names.append(name)
        if section is not None and section not in obj.sections and typ == STT_SECTION:
            continue  # section symbol of a dropped section (e.g. .note.GNU-stack)
        obj.symbols.append(Symbol(name, section, value, size, bind, typ))
    return names


def _read_relocs(elf: ElfFile, sh: SectionHeader, names: list[str], obj: ObjectFile) -> None:
    target = elf.sections[sh.info].name
    if target not in obj.sections:
        return
    raw = elf.content(sh)
    for o in range(0, len(raw), RELA.size):
        offset, info, addend = RELA.unpack_from(raw, o)
        sym = info >> 32
        if sym >= len(names):
            raise ElfError(f"{elf.path}: relocation names symbol #{sym} out of range")
        obj.sections[target].relocs.append(Reloc(offset, info & 0xFFFFFFFF, names[sym], addend))


@dataclass(frozen=True)
class DynSymbol:
    name: str
    type: int
    bind: int
    size: int


@dataclass
class SharedLibrary:
    path: str
    soname: str
    needed: list[str]
    symbols: dict[str, DynSymbol]  # defined, exported symbols only
    machine: int = 0               # ELF e_machine


def read_shared_library(data: bytes, path: str) -> SharedLibrary:
    """The SONAME, DT_NEEDED and exported (defined) dynamic symbols of a shared object."""
    elf = ElfFile(data, path)
    if elf.type != ET_DYN:
        raise ElfError(f"{path}: not a shared object (e_type={elf.type})")
    symbols: dict[str, DynSymbol] = {}
    dynsym = next((sh for sh in elf.sections if sh.type == SHT_DYNSYM), None)
    for name, info, _o, shndx, _v, size in (elf.symbols(dynsym)[1:] if dynsym else []):
        if shndx != SHN_UNDEF and name and name not in symbols:
            symbols[name] = DynSymbol(name, info & 0xF, info >> 4, size)
    soname, needed = path.rsplit("/", 1)[-1], []
    dynamic = next((sh for sh in elf.sections if sh.type == SHT_DYNAMIC), None)
    if dynamic is not None:
        strs = elf.content(elf.sections[dynamic.link])
        raw = elf.content(dynamic)
        for o in range(0, len(raw), DYN.size):
            tag, val = DYN.unpack_from(raw, o)
            if tag == DT_NULL:
                break
            if tag == DT_SONAME:
                soname = _cstr(strs, val)
            elif tag == DT_NEEDED:
                needed.append(_cstr(strs, val))
    return SharedLibrary(path, soname, needed, symbols, elf.machine)
