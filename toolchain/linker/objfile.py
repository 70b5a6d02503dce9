"""In-memory model of an ELF64 relocatable object: what the assembler produces, the writer
serialises, the reader parses back and the linker consumes.

Invariants:
- Sections are keyed by name; `.bss`-like sections (SHT_NOBITS) keep `size` and no data.
- A symbol refers to its section by name (None: undefined). A section symbol is named after
  its section and has type STT_SECTION.
- Relocations name their target symbol; local labels are referenced through their section
  symbol plus an addend, as assemblers do, so names never need to be unique across objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .elf_consts import (EM_X86_64, SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, SHT_NOBITS, SHT_PROGBITS,
                         STB_GLOBAL, STB_LOCAL, STT_NOTYPE, STT_SECTION)


@dataclass
class Reloc:
    offset: int
    type: int
    symbol: str
    addend: int = 0


@dataclass
class Section:
    name: str
    type: int = SHT_PROGBITS
    flags: int = SHF_ALLOC
    align: int = 1
    data: bytearray = field(default_factory=bytearray)
    nobits_size: int = 0
    relocs: list[Reloc] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.nobits_size if self.type == SHT_NOBITS else len(self.data)


@dataclass
class Symbol:
    name: str
    section: str | None  # None: undefined
    value: int = 0
    size: int = 0
    bind: int = STB_GLOBAL
    type: int = STT_NOTYPE

    @property
    def defined(self) -> bool:
        return self.section is not None

    @property
    def is_local(self) -> bool:
        return self.bind == STB_LOCAL


@dataclass
class ObjectFile:
    sections: dict[str, Section] = field(default_factory=dict)
    symbols: list[Symbol] = field(default_factory=list)
    name: str = "<memory>"
    machine: int = EM_X86_64   # ELF e_machine: EM_X86_64 or EM_AARCH64

    def symbol(self, name: str) -> Symbol | None:
        for s in self.symbols:
            if s.name == name and s.type != STT_SECTION:
                return s
        for s in self.symbols:
            if s.name == name:
                return s
        return None


# The standard sections and their attributes: (type, flags, alignment).
STANDARD_SECTIONS = {
    ".text": (SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 16),
    ".rodata": (SHT_PROGBITS, SHF_ALLOC, 16),
    ".data": (SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 16),
    ".bss": (SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 16),
}


def standard_section(name: str) -> Section:
    typ, flags, align = STANDARD_SECTIONS.get(name, (SHT_PROGBITS, SHF_ALLOC, 1))
    return Section(name, typ, flags, align)


def section_symbol(name: str) -> Symbol:
    return Symbol(name, name, 0, 0, STB_LOCAL, STT_SECTION)
