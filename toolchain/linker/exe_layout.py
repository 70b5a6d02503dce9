"""Lay out and write the executable image for `link.py`.

Steps, in order: merge input sections by kind (text/rodata/data/bss, each input section at
its alignment, in input order); scan relocations to find GOT slots, PLT entries and dynamic
relocations; create the dynamic tables at their final sizes; assign file offsets and
addresses (three page-aligned LOAD segments, vaddr = 0x400000 + file offset so offsets and
addresses agree modulo the page size); fill the address-dependent tables; apply relocations;
serialise headers, contents and the section header table.
Invariant: nothing here depends on anything but its inputs (no time, no environment).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..compiler.diagnostics import error
from . import dynamic as dyn
from .elf_consts import (DT_DEBUG, DT_FLAGS, DT_FLAGS_1, DT_HASH, DT_JMPREL, DT_NEEDED,
                         DT_NULL, DT_PLTGOT, DT_PLTREL, DT_PLTRELSZ, DT_RELA, DT_RELAENT,
                         DT_RELASZ, DT_RUNPATH, DT_STRSZ, DT_STRTAB, DT_SYMENT, DT_SYMTAB,
                         DF_1_NOW, DF_BIND_NOW, DYN, EHDR, ET_EXEC, PF_R, PF_W,
                         PF_X, PHDR, PT_DYNAMIC, PT_GNU_STACK, PT_INTERP, PT_LOAD, PT_PHDR,
                         RELA, SHDR,
                         SHF_ALLOC, SHF_EXECINSTR, SHF_INFO_LINK, SHF_WRITE, SHT_DYNAMIC,
                         SHT_DYNSYM, SHT_HASH, SHT_NOBITS, SHT_PROGBITS, SHT_RELA, SHT_STRTAB,
                         STT_SECTION, SYM, ident)
from .elf_writer import StringTable
from .objfile import ObjectFile, Symbol
from .arch import X86_64, Arch
from .relocs import RelocError
from .resolve import Resolution

BASE = 0x400000
SEG_R, SEG_RX, SEG_RW = 0, 1, 2
_SEG_FLAGS = {SEG_R: PF_R, SEG_RX: PF_R | PF_X, SEG_RW: PF_R | PF_W}
PHNUM = 7
HEADERS_SIZE = EHDR.size + PHNUM * PHDR.size
# Merged output sections for input section kinds: (segment, flags, fill byte).
_MERGED = {
    ".rodata": (SEG_R, SHF_ALLOC, 0),
    ".text": (SEG_RX, SHF_ALLOC | SHF_EXECINSTR, 0xCC),  # int3 between functions
    ".data": (SEG_RW, SHF_ALLOC | SHF_WRITE, 0),
    ".bss": (SEG_RW, SHF_ALLOC | SHF_WRITE, 0),
}
_ORDER = (".interp", ".hash", ".dynsym", ".dynstr", ".rela.dyn", ".rela.plt", ".rodata",
          ".plt", ".text", ".dynamic", ".got", ".got.plt", ".data", ".bss")


@dataclass
class Out:
    name: str
    type: int
    flags: int
    segment: int
    align: int = 8
    data: bytearray = field(default_factory=bytearray)
    nobits: int = 0
    link: str = ""
    info: str | int = ""  # a section name (SHF_INFO_LINK) or a number (.dynsym)
    entsize: int = 0
    offset: int = 0
    addr: int = 0

    @property
    def size(self) -> int:
        return self.nobits if self.type == SHT_NOBITS else len(self.data)


def _kind(sec) -> str | None:
    if not sec.flags & SHF_ALLOC:
        return None
    if sec.type == SHT_NOBITS:
        return ".bss"
    if sec.flags & SHF_EXECINSTR:
        return ".text"
    return ".data" if sec.flags & SHF_WRITE else ".rodata"


class Image:
    def __init__(self, objs: list[ObjectFile], res: Resolution, needed: list[str],
                 runpath: str | None, arch: Arch = X86_64) -> None:
        self.objs, self.res, self.needed, self.runpath = objs, res, needed, runpath
        self.arch = arch
        self.out: dict[str, Out] = {}
        self.place: dict[tuple[int, str], tuple[str, int]] = {}
        self.syms = [self._symbol_map(o) for o in objs]
        self.got: list[str] = []  # GOT slot keys: a global name or "index\0local name"
        self.got_index: dict[str, int] = {}
        self.plt_index: dict[str, int] = {}
        self.plt: list[str] = []
        self.dyn_abs: list[tuple[int, str, int, str, int]] = []
        self.imports = [res.imports[n] for n in sorted(res.imports)]

    @staticmethod
    def _symbol_map(obj: ObjectFile) -> dict[str, Symbol]:
        table: dict[str, Symbol] = {}
        for s in obj.symbols:  # a named symbol wins over a same-named section symbol
            if s.type != STT_SECTION or s.name not in table:
                table[s.name] = s
        return table

    # -- merging and scanning ---------------------------------------------------------------
    def merge(self) -> None:
        for name, (seg, flags, _fill) in _MERGED.items():
            typ = SHT_NOBITS if name == ".bss" else SHT_PROGBITS
            self.out[name] = Out(name, typ, flags, seg, align=1)
        for i, obj in enumerate(self.objs):
            for sec in obj.sections.values():
                kind = _kind(sec)
                if kind is None:
                    continue
                out = self.out[kind]
                out.align = max(out.align, sec.align)
                pad = (-out.size) % max(sec.align, 1)
                if out.type == SHT_NOBITS:
                    out.nobits += pad
                    self.place[(i, sec.name)] = (kind, out.nobits)
                    out.nobits += sec.size
                else:
                    fill = self.arch.text_fill if kind == ".text" else 0
                    out.data += bytes([fill]) * pad
                    self.place[(i, sec.name)] = (kind, len(out.data))
                    out.data += sec.data

    def target(self, i: int, name: str) -> tuple[str, str]:
        """('local', key) | ('defined', name) | ('import', name) | ('zero', name)."""
        sym = self.syms[i].get(name)
        if sym is None:
            raise error("E0600", f"{self.objs[i].name}: relocation names unknown '{name}'")
        if sym.type == STT_SECTION or (sym.defined and sym.is_local):
            return "local", f"{i}\0{name}"
        if name in self.res.definitions:
            return "defined", name
        if name in self.res.imports:
            return "import", name
        return "zero", name

    def scan(self) -> None:
        plt = set()
        for i, obj in enumerate(self.objs):
            for sec in obj.sections.values():
                if (i, sec.name) not in self.place:
                    continue
                for r in sec.relocs:
                    self._scan_one(i, sec.name, r, plt)
        self.plt = sorted(plt)
        self.plt_index = {name: k for k, name in enumerate(self.plt)}

    def _scan_one(self, i: int, secname: str, r, plt: set) -> None:
        arch = self.arch
        if r.type not in arch.supported:
            raise error("E0605", f"{self.objs[i].name}: unsupported relocation "
                        f"{arch.reloc_name(r.type)} against '{r.symbol}' in {secname}")
        kind, key = self.target(i, r.symbol)
        if r.type in arch.got_relocs:
            if key not in self.got_index:
                self.got_index[key] = len(self.got)
                self.got.append(key)
            return
        if kind != "import":
            return
        imp = self.res.imports[key]
        if r.type == arch.abs64 and self.place[(i, secname)][0] in (".data", ".bss"):
            self.dyn_abs.append((i, secname, r.offset, key, r.addend))
        elif imp.is_function and r.type != arch.abs64:
            plt.add(key)
        else:
            what = "function" if imp.is_function else "data"
            raise error("E0605", f"{self.objs[i].name}: {arch.reloc_name(r.type)} in {secname} "
                        f"against imported {what} '{key}' from {imp.library}",
                        help="imported data must be accessed through the GOT "
                             "(rip(sym, got=True) / R_X86_64_GOTPCREL)")

    # -- dynamic tables ------------------------------------------------------------------------
    def make_tables(self) -> None:
        self.dynstr, dynsym, self.dynsym_index = dyn.dynstr_and_syms(
            self.imports, self.needed, self.runpath)
        n_rela = len(self.dyn_abs) + sum(1 for k in self.got if k in self.res.imports)
        add = self._add
        add(".interp", SHT_PROGBITS, SHF_ALLOC, SEG_R, self.arch.interp, align=1)
        add(".hash", SHT_HASH, SHF_ALLOC, SEG_R, dyn.sysv_hash(self.imports), link=".dynsym",
            entsize=4)
        add(".dynsym", SHT_DYNSYM, SHF_ALLOC, SEG_R, dynsym, link=".dynstr", info=1,
            entsize=SYM.size)
        add(".dynstr", SHT_STRTAB, SHF_ALLOC, SEG_R, bytes(self.dynstr.data), align=1)
        add(".rela.dyn", SHT_RELA, SHF_ALLOC, SEG_R, bytes(RELA.size * n_rela),
            link=".dynsym", entsize=RELA.size)
        add(".rela.plt", SHT_RELA, SHF_ALLOC | SHF_INFO_LINK, SEG_R,
            bytes(RELA.size * len(self.plt)), link=".dynsym", info=".got.plt",
            entsize=RELA.size)
        add(".plt", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, SEG_RX,
            bytes(dyn.PLT_ENTRY_SIZE * len(self.plt)), align=16, entsize=dyn.PLT_ENTRY_SIZE)
        add(".got", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, SEG_RW, bytes(8 * len(self.got)),
            entsize=8)
        add(".got.plt", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, SEG_RW,
            bytes(8 * (dyn.GOT_PLT_RESERVED + len(self.plt))), entsize=8)
        # last: the entry count depends on the tables above (addresses come later)
        add(".dynamic", SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, SEG_RW,
            bytes(DYN.size * len(self._dynamic_entries())), link=".dynstr", entsize=DYN.size)

    def _add(self, name, typ, flags, seg, data, align=8, link="", info="", entsize=0):
        self.out[name] = Out(name, typ, flags, seg, align, bytearray(data), 0, link, info,
                             entsize)

    def _dynamic_entries(self) -> list[tuple[int, int]]:
        o, s = self.out, self.dynstr
        entries = [(DT_NEEDED, s.offsets[n]) for n in self.needed]
        if self.runpath:
            entries.append((DT_RUNPATH, s.offsets[self.runpath]))
        entries += [(DT_HASH, o[".hash"].addr), (DT_STRTAB, o[".dynstr"].addr),
                    (DT_SYMTAB, o[".dynsym"].addr), (DT_STRSZ, len(s.data)),
                    (DT_SYMENT, SYM.size)]
        if o[".rela.dyn"].size:
            entries += [(DT_RELA, o[".rela.dyn"].addr), (DT_RELASZ, o[".rela.dyn"].size),
                        (DT_RELAENT, RELA.size)]
        entries.append((DT_PLTGOT, o[".got.plt"].addr))
        if self.plt:
            entries += [(DT_PLTRELSZ, o[".rela.plt"].size), (DT_PLTREL, DT_RELA),
                        (DT_JMPREL, o[".rela.plt"].addr)]
        entries += [(DT_FLAGS, DF_BIND_NOW), (DT_FLAGS_1, DF_1_NOW), (DT_DEBUG, 0),
                    (DT_NULL, 0)]
        return entries

    # -- addresses ---------------------------------------------------------------------------
    def layout(self) -> list[Out]:
        """Drop empty optional sections, then assign offsets/addresses in _ORDER."""
        keep = (".interp", ".hash", ".dynsym", ".dynstr", ".text", ".dynamic", ".got.plt")
        secs = [self.out[n] for n in _ORDER if self.out[n].size or n in keep]
        offset, seg = HEADERS_SIZE, SEG_R
        for s in secs:
            if s.segment != seg:
                offset, seg = offset + (-offset) % self.arch.page, s.segment
            offset += (-offset) % max(s.align, 1)
            s.offset, s.addr = offset, BASE + offset
            if s.type != SHT_NOBITS:
                offset += s.size
        self.sections = secs
        return secs

    def section_addr(self, i: int, secname: str) -> int:
        out, off = self.place[(i, secname)]
        return self.out[out].addr + off

    def address(self, i: int, name: str) -> int:
        kind, key = self.target(i, name)
        if kind == "local":
            sym = self.syms[i][name]
            return self.section_addr(i, sym.section) + sym.value
        if kind == "defined":
            j, sym = self.res.definitions[key]
            return self.section_addr(j, sym.section) + sym.value
        if kind == "import":
            return self.out[".plt"].addr + dyn.PLT_ENTRY_SIZE * self.plt_index[key]
        return 0

    def got_addr(self, key: str) -> int:
        return self.out[".got"].addr + 8 * self.got_index[key]

    # -- contents -----------------------------------------------------------------------------
    def fill(self) -> None:
        o = self.out
        got_plt = o[".got.plt"]
        got_plt.data[0:8] = o[".dynamic"].addr.to_bytes(8, "little")
        plt_rela, dyn_rela = [], []
        for k, name in enumerate(self.plt):
            slot = got_plt.addr + 8 * (dyn.GOT_PLT_RESERVED + k)
            entry = o[".plt"].addr + dyn.PLT_ENTRY_SIZE * k
            o[".plt"].data[k * 16:(k + 1) * 16] = self.arch.plt_entry(entry, slot)
            plt_rela.append((slot, self.dynsym_index[name], self.arch.jump_slot, 0))
        for k, key in enumerate(self.got):
            if key in self.res.imports:
                dyn_rela.append((self.got_addr(key), self.dynsym_index[key],
                                 self.arch.glob_dat, 0))
            else:  # non-PIE: a defined symbol's address is known now
                i, _, name = key.partition("\0") if "\0" in key else (None, "", key)
                addr = (self.address(int(i), name) if i is not None
                        else self.address(self.res.definitions[key][0], key))
                o[".got"].data[8 * k:8 * k + 8] = addr.to_bytes(8, "little")
        for i, secname, off, name, addend in self.dyn_abs:
            dyn_rela.append((self.section_addr(i, secname) + off, self.dynsym_index[name],
                             self.arch.abs64, addend))
        o[".rela.dyn"].data[:] = dyn.rela(sorted(dyn_rela))
        o[".rela.plt"].data[:] = dyn.rela(plt_rela)
        o[".dynamic"].data[:] = dyn.dynamic(self._dynamic_entries())

    def relocate(self) -> None:
        dyn_places = {(i, s, off) for i, s, off, _n, _a in self.dyn_abs}
        for i, obj in enumerate(self.objs):
            for sec in obj.sections.values():
                if (i, sec.name) not in self.place or not sec.relocs:
                    continue
                outname, base = self.place[(i, sec.name)]
                out = self.out[outname]
                for r in sec.relocs:
                    if (i, sec.name, r.offset) in dyn_places:
                        continue  # the dynamic loader writes this word
                    target = (self.got_addr(self.target(i, r.symbol)[1])
                              if r.type in self.arch.got_relocs
                              else self.address(i, r.symbol))
                    place = out.addr + base + r.offset
                    try:
                        self.arch.apply(out.data, base + r.offset, r.type, target, r.addend,
                                        place)
                    except RelocError as e:
                        raise error("E0605", f"{obj.name}: {e} (symbol '{r.symbol}' at "
                                    f"{sec.name}+{r.offset:#x})") from None

    # -- serialisation ----------------------------------------------------------------------------
    def _segments(self) -> list[tuple[int, int, int, int, int]]:
        """(flags, offset, addr, filesz, memsz) for each LOAD segment."""
        segs = []
        for seg in (SEG_R, SEG_RX, SEG_RW):
            secs = [s for s in self.sections if s.segment == seg]
            start = 0 if seg == SEG_R else secs[0].offset
            file_end = max(s.offset + (0 if s.type == SHT_NOBITS else s.size) for s in secs)
            mem_end = max(s.offset + s.size for s in secs)
            segs.append((_SEG_FLAGS[seg], start, BASE + start, file_end - start,
                         mem_end - start))
        return segs

    def _phdrs(self) -> bytes:
        o = self.out
        out = PHDR.pack(PT_PHDR, PF_R, EHDR.size, BASE + EHDR.size, BASE + EHDR.size,
                        PHNUM * PHDR.size, PHNUM * PHDR.size, 8)
        it = o[".interp"]
        out += PHDR.pack(PT_INTERP, PF_R, it.offset, it.addr, it.addr, it.size, it.size, 1)
        for flags, off, addr, filesz, memsz in self._segments():
            out += PHDR.pack(PT_LOAD, flags, off, addr, addr, filesz, memsz, self.arch.page)
        d = o[".dynamic"]
        out += PHDR.pack(PT_DYNAMIC, PF_R | PF_W, d.offset, d.addr, d.addr, d.size, d.size, 8)
        out += PHDR.pack(PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 0, 16)
        return out

    def serialise(self, entry: int) -> bytes:
        body = bytearray(HEADERS_SIZE)
        for s in self.sections:
            if s.type != SHT_NOBITS:
                body += bytes(s.offset - len(body)) + s.data
        shstr = StringTable()
        names = [shstr.add(s.name) for s in self.sections] + [shstr.add(".shstrtab")]
        shstr_off = len(body)
        body += shstr.data
        body += bytes((-len(body)) % 8)
        shoff = len(body)
        index = {s.name: k for k, s in enumerate(self.sections, start=1)}
        shdrs = bytearray(SHDR.size)
        for name, s in zip(names, self.sections):
            info = index.get(s.info, 0) if isinstance(s.info, str) else s.info
            shdrs += SHDR.pack(name, s.type, s.flags, s.addr, s.offset, s.size,
                               index.get(s.link, 0), info, s.align, s.entsize)
        shdrs += SHDR.pack(names[-1], SHT_STRTAB, 0, 0, shstr_off, len(shstr.data), 0, 0, 1, 0)
        nsec = len(self.sections) + 2
        ehdr = EHDR.pack(ident(), ET_EXEC, self.arch.machine, 1, entry, EHDR.size, shoff, 0,
                         EHDR.size, PHDR.size, PHNUM, SHDR.size, nsec, nsec - 1)
        body[:HEADERS_SIZE] = ehdr + self._phdrs()
        return bytes(body + shdrs)


def build_executable(objs: list[ObjectFile], res: Resolution, needed: list[str],
                     runpath: str | None, arch: Arch = X86_64) -> bytes:
    image = Image(objs, res, needed, runpath, arch)
    image.merge()
    image.scan()
    image.make_tables()
    image.layout()
    image.fill()
    image.relocate()
    if "_start" not in res.definitions:
        raise error("E0601", "undefined entry symbol '_start'")
    return image.serialise(image.address(res.definitions["_start"][0], "_start"))
