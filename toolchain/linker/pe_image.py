"""PE32+ image pieces for pe_link.py: section records, the import table, base relocations,
headers and the checksum (Microsoft PE/COFF specification).

Invariants: section RVAs are 0x1000-aligned and in order; raw data is 0x200-aligned; .bss
has no raw data; the import table lists DLLs and names sorted (deterministic), and its IAT
is one contiguous block (data directory 12). Nothing depends on time or environment.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

IMAGE_BASE = 0x140000000
SECTION_ALIGN, FILE_ALIGN = 0x1000, 0x200
_READ, _WRITE, _EXEC, _DISCARD = 0x40000000, 0x80000000, 0x20000000, 0x02000000
TEXT = 0x20 | _EXEC | _READ
RDATA = 0x40 | _READ
DATA = 0x40 | _READ | _WRITE
BSS = 0x80 | _READ | _WRITE
RELOC = 0x40 | _READ | _DISCARD
IMAGE_REL_BASED_DIR64 = 10
DOS_SIZE = 0x80
OPTIONAL_HEADER = struct.Struct("<HBBIIIIIQIIHHHHHHIIIIHHQQQQII")   # 112 bytes + directories
FILE_HEADER = struct.Struct("<4sHHIIIHH")                           # with the PE signature
SECTION_HEADER = struct.Struct("<8sIIIIIIHHI")
# DllCharacteristics: HIGH_ENTROPY_VA | DYNAMIC_BASE | NX_COMPAT | TERMINAL_SERVER_AWARE
DLL_CHARACTERISTICS = 0x0020 | 0x0040 | 0x0100 | 0x8000


def align(v: int, a: int) -> int:
    return (v + a - 1) // a * a


@dataclass
class Sec:
    name: str
    flags: int
    data: bytearray
    bss: int = 0                 # extra zero bytes beyond data (only .bss)
    rva: int = 0
    raw: int = 0                 # file offset of the raw data

    @property
    def vsize(self) -> int:
        return len(self.data) + self.bss


def assign_rvas(secs: list[Sec]) -> None:
    rva = SECTION_ALIGN
    for s in secs:
        s.rva = rva
        rva = align(rva + max(s.vsize, 1), SECTION_ALIGN)


@dataclass
class ImportTable:
    """descriptors | lookup tables | IAT | hint/name entries | DLL names, inside .idata."""
    imports: dict[str, str]                       # function -> dll
    rva: int = 0
    by_dll: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in sorted(self.imports):
            self.by_dll.setdefault(self.imports[name], []).append(name)
        self.by_dll = dict(sorted(self.by_dll.items()))
        self.desc_size = 20 * (len(self.by_dll) + 1)
        self.lookup_size = sum(8 * (len(v) + 1) for v in self.by_dll.values())
        self.hints = {}
        off = 0
        for names in self.by_dll.values():
            for n in names:
                self.hints[n] = off
                off += align(2 + len(n) + 1, 2)
        self.hint_size = off
        self.dll_names, off = {}, 0
        for dll in self.by_dll:
            self.dll_names[dll] = off
            off += len(dll) + 1
        self.size = align(self.desc_size + 2 * self.lookup_size + self.hint_size + off, 8) \
            if self.by_dll else 0
        self.slot = {}
        k = 0
        for names in self.by_dll.values():
            for n in names:
                self.slot[n] = k
                k += 1
            k += 1

    @property
    def iat_offset(self) -> int:
        return self.desc_size + self.lookup_size

    def iat_rva(self, name: str) -> int:
        return self.rva + self.iat_offset + 8 * self.slot[name]

    def fill(self, sec: Sec) -> None:
        self.rva = sec.rva
        d = sec.data
        hint_base = self.desc_size + 2 * self.lookup_size
        name_base = hint_base + self.hint_size
        k = 0
        for i, (dll, names) in enumerate(self.by_dll.items()):
            ilt = self.desc_size + 8 * k
            iat = self.iat_offset + 8 * k
            struct.pack_into("<IIIII", d, 20 * i, self.rva + ilt, 0, 0,
                             self.rva + name_base + self.dll_names[dll], self.rva + iat)
            for j, n in enumerate(names):
                entry = self.rva + hint_base + self.hints[n]
                struct.pack_into("<Q", d, ilt + 8 * j, entry)
                struct.pack_into("<Q", d, iat + 8 * j, entry)
                at = hint_base + self.hints[n]
                d[at + 2:at + 2 + len(n)] = n.encode()
            k += len(names) + 1
        for dll, off in self.dll_names.items():
            d[name_base + off:name_base + off + len(dll)] = dll.encode()


def base_relocations(rvas: list[int]) -> bytes:
    """IMAGE_BASE_RELOCATION blocks (one per 4 KiB page) of DIR64 entries, each block padded
    to 4 bytes with an ABSOLUTE entry."""
    out = bytearray()
    pages: dict[int, list[int]] = {}
    for rva in sorted(set(rvas)):
        pages.setdefault(rva & ~0xFFF, []).append(rva & 0xFFF)
    for page, offs in pages.items():
        entries = [IMAGE_REL_BASED_DIR64 << 12 | o for o in offs]
        if len(entries) % 2:
            entries.append(0)
        out += struct.pack("<II", page, 8 + 2 * len(entries))
        out += b"".join(struct.pack("<H", e) for e in entries)
    return bytes(out)


def checksum(image: bytes, checksum_at: int) -> int:
    """The PE checksum (as imagehlp's CheckSumMappedFile computes it)."""
    data = image[:checksum_at] + b"\0\0\0\0" + image[checksum_at + 4:]
    data += b"\0" * (len(data) % 2)
    total = 0
    for (word,) in struct.iter_unpack("<H", data):
        total += word
        total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    return (total + len(image)) & 0xFFFFFFFF


def write_image(secs: list[Sec], imp: ImportTable, dir64: list[int], entry: int) -> bytes:
    relocs = base_relocations(dir64)
    if relocs:
        secs = secs + [Sec(".reloc", RELOC, bytearray(relocs))]
        assign_rvas(secs)
        # assign_rvas keeps earlier RVAs: sections are only appended
    headers_size = align(DOS_SIZE + FILE_HEADER.size + OPTIONAL_HEADER.size + 16 * 8 +
                         SECTION_HEADER.size * len(secs), FILE_ALIGN)
    raw = headers_size
    for s in secs:
        s.raw = raw if s.data else 0
        raw += align(len(s.data), FILE_ALIGN)
    size_of_image = align(secs[-1].rva + max(secs[-1].vsize, 1), SECTION_ALIGN)
    code = sum(align(len(s.data), FILE_ALIGN) for s in secs if s.flags & 0x20)
    init = sum(align(len(s.data), FILE_ALIGN) for s in secs if s.flags & 0x40)
    uninit = sum(s.vsize for s in secs if s.flags & 0x80)
    dirs = [(0, 0)] * 16
    by_name = {s.name: s for s in secs}
    if imp.by_dll:
        dirs[1] = (imp.rva, imp.desc_size)
        dirs[12] = (imp.rva + imp.iat_offset, imp.lookup_size)
    if relocs:
        dirs[5] = (by_name[".reloc"].rva, len(relocs))
    dos = bytearray(DOS_SIZE)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, DOS_SIZE)
    head = FILE_HEADER.pack(b"PE\0\0", 0x8664, len(secs), 0, 0, 0,
                            OPTIONAL_HEADER.size + 16 * 8, 0x0022)
    opt = OPTIONAL_HEADER.pack(
        0x20B, 14, 0, code, init, uninit, entry, by_name[".text"].rva, IMAGE_BASE,
        SECTION_ALIGN, FILE_ALIGN, 6, 0, 0, 0, 6, 0, 0, size_of_image, headers_size, 0,
        3, DLL_CHARACTERISTICS, 0x100000, 0x1000, 0x100000, 0x1000, 0, 16)
    opt += b"".join(struct.pack("<II", *d) for d in dirs)
    table = b"".join(SECTION_HEADER.pack(
        s.name.encode().ljust(8, b"\0"), s.vsize, s.rva, align(len(s.data), FILE_ALIGN),
        s.raw, 0, 0, 0, 0, s.flags) for s in secs)
    image = bytearray(dos + head + opt + table)
    image += bytes(headers_size - len(image))
    for s in secs:
        if s.data:
            image += s.data + bytes(align(len(s.data), FILE_ALIGN) - len(s.data))
    checksum_at = DOS_SIZE + FILE_HEADER.size + 64
    struct.pack_into("<I", image, checksum_at, checksum(bytes(image), checksum_at))
    return bytes(image)
