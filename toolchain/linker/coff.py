"""COFF (Microsoft PE/COFF specification) object files for Windows x64: constants, the
writer (ObjectFile -> .obj bytes) and the reader (.obj bytes -> ObjectFile).

The assembler produces an `ObjectFile` with x86-64 ELF relocation types; `write_coff` maps
them to COFF ones:
  R_X86_64_PLT32 / PC32 (S + A - P)  -> IMAGE_REL_AMD64_REL32 with A + 4 stored in the field
                                        (REL32 computes S + field - (P + 4));
  R_X86_64_64 (S + A)                -> IMAGE_REL_AMD64_ADDR64, A stored in the field;
  R_X86_64_*GOTPCREL* against X      -> REL32 against `__imp_X`: the import address table
                                        slot holding X's address plays the GOT slot's role.
`read_coff` returns an ObjectFile with machine IMAGE_FILE_MACHINE_AMD64, COFF relocation
types and each field's implicit addend moved into `Reloc.addend` (the field zeroed).
Sections: .text, .rdata (the assembler's .rodata), .data, .bss; symbols: one static section
symbol (with its auxiliary record) per section, then locals, then externals. Output is
deterministic (TimeDateStamp 0, tables in object order). Malformed input raises CoffError.
"""
from __future__ import annotations

import struct

from .elf_consts import (R_X86_64_64, R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX, R_X86_64_PC32,
                         R_X86_64_PLT32, R_X86_64_REX_GOTPCRELX, SHF_EXECINSTR, SHF_WRITE,
                         SHT_NOBITS, STB_GLOBAL, STB_LOCAL, STT_FUNC, STT_NOTYPE,
                         STT_SECTION)
from .objfile import ObjectFile, Reloc, Section, Symbol

IMAGE_FILE_MACHINE_AMD64 = 0x8664
IMAGE_REL_AMD64_ABSOLUTE, IMAGE_REL_AMD64_ADDR64, IMAGE_REL_AMD64_ADDR32 = 0, 1, 2
IMAGE_REL_AMD64_ADDR32NB, IMAGE_REL_AMD64_REL32 = 3, 4   # REL32_1..REL32_5 are 5..9
IMAGE_SCN_CNT_CODE, IMAGE_SCN_CNT_INITIALIZED_DATA = 0x20, 0x40
IMAGE_SCN_CNT_UNINITIALIZED_DATA = 0x80
IMAGE_SCN_MEM_EXECUTE, IMAGE_SCN_MEM_READ = 0x20000000, 0x40000000
IMAGE_SCN_MEM_WRITE, IMAGE_SCN_MEM_DISCARDABLE = 0x80000000, 0x02000000
IMAGE_SYM_CLASS_EXTERNAL, IMAGE_SYM_CLASS_STATIC = 2, 3
IMAGE_SYM_DTYPE_FUNCTION = 0x20
IMP_PREFIX = "__imp_"

FILE_HEADER = struct.Struct("<HHIIIHH")          # 20 bytes
SECTION_HEADER = struct.Struct("<8sIIIIIIHHI")   # 40 bytes
RELOC = struct.Struct("<IIH")                    # 10 bytes
SYMBOL = struct.Struct("<8sIhHBB")               # 18 bytes
SECTION_AUX = struct.Struct("<IHHIHB3s")         # 18 bytes

_NAMES = {".rodata": ".rdata"}
_GOT = (R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX)


class CoffError(ValueError):
    pass


def align_flag(n: int) -> int:
    """IMAGE_SCN_ALIGN_<n>BYTES."""
    return (max(n, 1).bit_length()) << 20


def section_flags(sec: Section) -> int:
    align = align_flag(sec.align)
    if sec.type == SHT_NOBITS:
        return IMAGE_SCN_CNT_UNINITIALIZED_DATA | IMAGE_SCN_MEM_READ | IMAGE_SCN_MEM_WRITE | align
    if sec.flags & SHF_EXECINSTR:
        return IMAGE_SCN_CNT_CODE | IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_MEM_READ | align
    flags = IMAGE_SCN_CNT_INITIALIZED_DATA | IMAGE_SCN_MEM_READ | align
    return flags | (IMAGE_SCN_MEM_WRITE if sec.flags & SHF_WRITE else 0)


class _Strings:
    def __init__(self) -> None:
        self.data = bytearray(4)

    def name(self, s: str) -> bytes:
        raw = s.encode()
        if len(raw) <= 8:
            return raw.ljust(8, b"\0")
        off = len(self.data)
        self.data += raw + b"\0"
        return struct.pack("<II", 0, off)

    def finish(self) -> bytes:
        self.data[:4] = struct.pack("<I", len(self.data))
        return bytes(self.data)


def _coff_reloc(r: Reloc, data: bytearray) -> tuple[int, str]:
    """(COFF type, symbol) for an ELF-typed relocation; writes the implicit addend."""
    if r.type in (R_X86_64_PLT32, R_X86_64_PC32) or r.type in _GOT:
        data[r.offset:r.offset + 4] = struct.pack("<i", r.addend + 4)
        sym = IMP_PREFIX + r.symbol if r.type in _GOT else r.symbol
        return IMAGE_REL_AMD64_REL32, sym
    if r.type == R_X86_64_64:
        data[r.offset:r.offset + 8] = struct.pack("<q", r.addend)
        return IMAGE_REL_AMD64_ADDR64, r.symbol
    raise CoffError(f"relocation type {r.type} against '{r.symbol}' has no COFF equivalent")


def write_coff(obj: ObjectFile) -> bytes:
    """The COFF object for an assembler-produced (ELF-typed) ObjectFile."""
    sections = list(obj.sections.values())
    number = {s.name: i for i, s in enumerate(sections, start=1)}
    strings = _Strings()
    # symbols: section symbols (2 entries each), locals, externals (+ __imp_ references)
    table, index = bytearray(), {}
    count = 0
    for sec in sections:
        index[sec.name] = count
        table += SYMBOL.pack(strings.name(_NAMES.get(sec.name, sec.name)), 0, number[sec.name],
                             0, IMAGE_SYM_CLASS_STATIC, 1)
        table += SECTION_AUX.pack(sec.size, len(sec.relocs), 0, 0, 0, 0, b"\0" * 3)
        count += 2
    others = [s for s in obj.symbols if s.type != STT_SECTION]
    ordered = [s for s in others if s.is_local] + [s for s in others if not s.is_local]
    wanted = {r.symbol for s in sections for r in s.relocs if r.type in _GOT}
    for name in sorted(wanted):
        ordered.append(Symbol(IMP_PREFIX + name, None))
    for s in ordered:   # a named symbol wins over a same-named section symbol
        index[s.name] = count
        table += SYMBOL.pack(strings.name(s.name), s.value,
                             number[s.section] if s.section else 0,
                             IMAGE_SYM_DTYPE_FUNCTION if s.type == STT_FUNC else 0,
                             IMAGE_SYM_CLASS_STATIC if s.is_local else
                             IMAGE_SYM_CLASS_EXTERNAL, 0)
        count += 1
    # section contents and relocations
    headers, body = [], bytearray()
    offset = FILE_HEADER.size + SECTION_HEADER.size * len(sections)
    for sec in sections:
        data = bytearray(sec.data)
        relocs = bytearray()
        for r in sec.relocs:
            typ, sym = _coff_reloc(r, data)
            if sym not in index:
                raise CoffError(f"relocation in {sec.name} names unknown symbol '{sym}'")
            relocs += RELOC.pack(r.offset, index[sym], typ)
        raw_ptr = 0 if sec.type == SHT_NOBITS else offset + len(body)
        if sec.type != SHT_NOBITS:
            body += data
        rel_ptr = offset + len(body) if relocs else 0
        body += relocs
        headers.append(SECTION_HEADER.pack(
            strings.name(_NAMES.get(sec.name, sec.name)), 0, 0, sec.size, raw_ptr, rel_ptr, 0,
            len(sec.relocs), 0, section_flags(sec)))
    symtab_ptr = offset + len(body)
    head = FILE_HEADER.pack(IMAGE_FILE_MACHINE_AMD64, len(sections), 0, symtab_ptr, count, 0, 0)
    return head + b"".join(headers) + bytes(body) + bytes(table) + strings.finish()


# -- reading -------------------------------------------------------------------------------
def is_coff(data: bytes) -> bool:
    return len(data) >= FILE_HEADER.size and data[:2] == b"\x64\x86"


def _name(raw: bytes, strtab: bytes) -> str:
    if raw[:4] == b"\0\0\0\0" and raw != bytes(8):
        off = struct.unpack_from("<I", raw, 4)[0]
        end = strtab.find(b"\0", off)
        return strtab[off:end].decode("utf-8", "replace")
    return raw.rstrip(b"\0").decode("utf-8", "replace")


def _section_name(raw: bytes, strtab: bytes) -> str:
    if raw[:1] == b"/" and raw[1:].rstrip(b"\0").isdigit():
        off = int(raw[1:].rstrip(b"\0"))
        return strtab[off:strtab.find(b"\0", off)].decode()
    return raw.rstrip(b"\0").decode("utf-8", "replace")


def read_coff(data: bytes, path: str = "<memory>") -> ObjectFile:
    try:
        return _read(bytes(data), path)
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise CoffError(f"{path}: malformed COFF object ({e})") from None


def _read(data: bytes, path: str) -> ObjectFile:
    if not is_coff(data):
        raise CoffError(f"{path}: not an x64 COFF object")
    _m, nsec, _t, symptr, nsym, opt, _c = FILE_HEADER.unpack_from(data)
    strtab_at = symptr + SYMBOL.size * nsym
    strtab = data[strtab_at:strtab_at + struct.unpack_from("<I", data, strtab_at)[0]] \
        if nsym else b""
    obj = ObjectFile(name=path, machine=IMAGE_FILE_MACHINE_AMD64)
    secs = []
    for i in range(nsec):
        raw = SECTION_HEADER.unpack_from(data, FILE_HEADER.size + opt + SECTION_HEADER.size * i)
        name, size, rawptr, relptr, nrel, flags = (_section_name(raw[0], strtab), raw[3],
                                                   raw[4], raw[5], raw[7], raw[9])
        sec = Section(name, SHT_NOBITS if flags & IMAGE_SCN_CNT_UNINITIALIZED_DATA else 1,
                      _elf_flags(flags), 1 << max(((flags >> 20) & 0xF) - 1, 0))
        if sec.type == SHT_NOBITS:
            sec.nobits_size = size
        else:
            if rawptr + size > len(data):
                raise CoffError(f"{path}: section {name} data out of range")
            sec.data = bytearray(data[rawptr:rawptr + size])
        secs.append((sec, relptr, nrel))
        obj.sections[name] = sec
    names: dict[int, str] = {}
    k = 0
    while k < nsym:
        raw, value, secnum, typ, cls, naux = SYMBOL.unpack_from(data, symptr + SYMBOL.size * k)
        name = _name(raw, strtab)
        section = secs[secnum - 1][0].name if 0 < secnum <= len(secs) else None
        if cls == IMAGE_SYM_CLASS_STATIC and naux and value == 0 and section == name:
            obj.symbols.append(Symbol(name, name, 0, 0, STB_LOCAL, STT_SECTION))
        else:
            bind = STB_LOCAL if cls == IMAGE_SYM_CLASS_STATIC else STB_GLOBAL
            kind = STT_FUNC if typ == IMAGE_SYM_DTYPE_FUNCTION else STT_NOTYPE
            obj.symbols.append(Symbol(name, section, value, 0, bind, kind))
        names[k] = name
        k += 1 + naux
    for sec, relptr, nrel in secs:
        for j in range(nrel):
            off, symidx, typ = RELOC.unpack_from(data, relptr + RELOC.size * j)
            if symidx not in names:
                raise CoffError(f"{path}: relocation names symbol #{symidx} out of range")
            width = 8 if typ == IMAGE_REL_AMD64_ADDR64 else 4
            addend = int.from_bytes(sec.data[off:off + width], "little", signed=True)
            sec.data[off:off + width] = bytes(width)
            sec.relocs.append(Reloc(off, typ, names[symidx], addend))
    return obj


def _elf_flags(flags: int) -> int:
    out = 0x2  # SHF_ALLOC
    if flags & IMAGE_SCN_MEM_WRITE:
        out |= SHF_WRITE
    if flags & IMAGE_SCN_MEM_EXECUTE:
        out |= SHF_EXECINSTR
    return out


__all__ = ["write_coff", "read_coff", "is_coff", "CoffError", "IMAGE_FILE_MACHINE_AMD64"]
