"""Serialise an `ObjectFile` as an ELF64 relocatable object (ET_REL) for its machine.

Layout: ELF header, section contents in order, then the section header table. Sections:
null, the content sections in the object's order, one `.rela<name>` per section with
relocations, `.note.GNU-stack` (non-executable stack), `.symtab`, `.strtab`, `.shstrtab`.
The symbol table holds the null symbol, one section symbol per content section, the other
local symbols, then globals (sh_info = index of the first global), each group in the
object's order. Output depends only on the object: deterministic byte for byte.
"""
from __future__ import annotations

from .elf_consts import (EHDR, EM_X86_64, ET_REL, RELA, SHDR, SHF_INFO_LINK, SHN_UNDEF,
                         SHT_NOBITS, SHT_PROGBITS, SHT_RELA, SHT_STRTAB, SHT_SYMTAB, STT_SECTION,
                         SYM, ident, r_info, st_info)
from .objfile import ObjectFile, Section, Symbol


class StringTable:
    """An ELF string table; offsets are stable once added."""

    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self.offsets: dict[str, int] = {"": 0}

    def add(self, s: str) -> int:
        if s not in self.offsets:
            self.offsets[s] = len(self.data)
            self.data += s.encode() + b"\0"
        return self.offsets[s]


def _ordered_symbols(obj: ObjectFile) -> list[Symbol]:
    sec_syms = [s for s in obj.symbols if s.type == STT_SECTION]
    have = {s.name for s in sec_syms}
    sec_syms += [Symbol(n, n, 0, 0, 0, STT_SECTION) for n in obj.sections if n not in have]
    others = [s for s in obj.symbols if s.type != STT_SECTION]
    return sec_syms + [s for s in others if s.is_local] + [s for s in others if not s.is_local]


def _symtab(syms: list[Symbol], shndx: dict[str, int]) -> tuple[bytes, StringTable]:
    strtab, out = StringTable(), bytearray(SYM.size)
    for s in syms:
        name = 0 if s.type == STT_SECTION else strtab.add(s.name)
        index = shndx[s.section] if s.section is not None else SHN_UNDEF
        out += SYM.pack(name, st_info(s.bind, s.type), 0, index, s.value, s.size)
    return bytes(out), strtab


def _rela(sec: Section, sym_index: dict[str, int]) -> bytes:
    out = bytearray()
    for r in sec.relocs:
        if r.symbol not in sym_index:
            raise ValueError(f"relocation in {sec.name} names unknown symbol '{r.symbol}'")
        out += RELA.pack(r.offset, r_info(sym_index[r.symbol], r.type), r.addend)
    return bytes(out)


def _sym_index(syms: list[Symbol]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, s in enumerate(syms, start=1):  # a named symbol wins over a same-named section
        if s.type != STT_SECTION or s.name not in index:
            index[s.name] = i
    return index


def write_object(obj: ObjectFile) -> bytes:
    """The ELF64 relocatable object for `obj`."""
    content = list(obj.sections.values())
    shndx = {s.name: i for i, s in enumerate(content, start=1)}
    syms = _ordered_symbols(obj)
    symtab, strtab = _symtab(syms, shndx)
    first_global = 1 + sum(1 for s in syms if s.is_local)
    index = _sym_index(syms)
    n_rela = sum(1 for s in content if s.relocs)
    symtab_idx = 1 + len(content) + n_rela + 1
    # (name, type, flags, data-or-size, link, info, align, entsize)
    headers = [(s.name, s.type, s.flags, s.data if s.type != SHT_NOBITS else s.size, 0, 0,
                s.align, 0) for s in content]
    headers += [(".rela" + s.name, SHT_RELA, SHF_INFO_LINK, _rela(s, index), symtab_idx,
                 shndx[s.name], 8, RELA.size) for s in content if s.relocs]
    headers.append((".note.GNU-stack", SHT_PROGBITS, 0, b"", 0, 0, 1, 0))
    headers.append((".symtab", SHT_SYMTAB, 0, symtab, symtab_idx + 1, first_global, 8,
                    SYM.size))
    headers.append((".strtab", SHT_STRTAB, 0, bytes(strtab.data), 0, 0, 1, 0))
    headers.append((".shstrtab", SHT_STRTAB, 0, None, 0, 0, 1, 0))
    return _assemble(headers, obj.machine)


def _assemble(headers: list[tuple], machine: int = EM_X86_64) -> bytes:
    shstr = StringTable()
    names = [shstr.add(h[0]) for h in headers]
    headers[-1] = headers[-1][:3] + (bytes(shstr.data),) + headers[-1][4:]
    body, shdrs = bytearray(), bytearray(SHDR.size)
    offset = EHDR.size
    for name, h in zip(names, headers):
        _, typ, flags, data, link, info, align, entsize = h
        if isinstance(data, int):  # SHT_NOBITS: a size, no file bytes
            size, data = data, b""
        else:
            size = len(data)
        pad = (-offset) % max(align, 1)
        body += bytes(pad)
        offset += pad
        shdrs += SHDR.pack(name, typ, flags, 0, offset, size, link, info, align, entsize)
        body += data
        offset += len(data)
    pad = (-offset) % 8
    body += bytes(pad)
    shoff = offset + pad
    ehdr = EHDR.pack(ident(), ET_REL, machine, 1, 0, 0, shoff, 0, EHDR.size, 0, 0,
                     SHDR.size, len(headers) + 1, len(headers))
    return ehdr + bytes(body) + bytes(shdrs)


__all__ = ["write_object", "StringTable"]
