"""The Windows x64 linker: COFF objects -> a PE32+ console executable.

CONTRACT
    link_pe(objects: list[bytes | ObjectFile], libraries: list[str] = (),
            output: str | None = None, link_args: list[str] = ()) -> bytes
  - `objects`: x64 COFF objects (coff.py; bytes are parsed with read_coff).
  - imports: every undefined function is looked up in ucrtbase.dll, kernel32.dll and
    ws2_32.dll (the tables in pe_imports.py), then DLLs named by path with -l (their export
    tables are read); `-l` names ucrt/c/m/kernel32/ws2_32 mean the built-in ones. A call
    reaches an import through a 16-byte thunk `jmp [rip + IAT slot]`; `__imp_X` (what the
    code generator uses to load an imported function's address) is the IAT slot itself.
    `__imp_X` of a symbol defined in an object gets a pointer slot in .data (with a base
    relocation).
  - If no object defines `mainCRTStartup`, pe_startup.py's runtime object is linked in: that
    entry (needs `main`) and weak printf-family definitions over ucrtbase.dll.
Output: ImageBase 0x140000000, sections .text, .rdata, .data, .bss, .idata (import
  descriptors, lookup tables, the IAT, names), .reloc (DIR64 base relocations for every
  ADDR64 field, so the image is ASLR-relocatable: DYNAMIC_BASE | HIGH_ENTROPY_VA | NX_COMPAT),
  console subsystem 6.0, a valid PE checksum, TimeDateStamp 0: byte-for-byte deterministic.
Relocations: IMAGE_REL_AMD64_REL32 (and REL32_1..5), ADDR64, ADDR32NB.
Errors (CompileError): E0600 bad input, E0601 undefined symbol, E0602 duplicate definition,
E0603 library not found, E0605 relocation out of range or unsupported.
"""
from __future__ import annotations

import os
import struct

from ..compiler.diagnostics import error
from . import pe_image
from .coff import (IMAGE_FILE_MACHINE_AMD64, IMAGE_REL_AMD64_ADDR32NB, IMAGE_REL_AMD64_ADDR64,
                   IMAGE_REL_AMD64_REL32, IMP_PREFIX, CoffError, read_coff)
from .dynamic import PLT_ENTRY_SIZE, plt_entry
from .elf_consts import SHF_EXECINSTR, SHF_WRITE, SHT_NOBITS, STB_WEAK, STT_SECTION
from .link import parse_link_args, read_inputs, write_output
from .objfile import ObjectFile, Symbol
from .pe_imports import ALIASES, BUILTIN
from .pe_reader import PeError, dll_exports
from .pe_startup import ENTRY, start_object
from .resolve import missing_main

IMAGE_BASE = pe_image.IMAGE_BASE
_KINDS = (".text", ".rdata", ".data", ".bss")


def _kind(sec) -> str:
    if sec.type == SHT_NOBITS:
        return ".bss"
    if sec.flags & SHF_EXECINSTR:
        return ".text"
    return ".data" if sec.flags & SHF_WRITE else ".rdata"


def _load_dlls(names: list[str], dirs: list[str]) -> dict[str, frozenset[str]]:
    dlls = dict(BUILTIN)          # ucrtbase, kernel32, ws2_32 (pe_imports.py)
    for name in names:
        if name.lower() in ALIASES:
            continue
        path = next((p for p in [name, *(os.path.join(d, name) for d in dirs)]
                     if os.path.isfile(p)), None)
        if path is None:
            raise error("E0603", f"library '{name}' not found",
                        help="Windows links name a DLL by path (-l C:/path/foo.dll) or one "
                             "of ucrt, kernel32, ws2_32")
        try:
            with open(path, "rb") as f:
                dlls[os.path.basename(path).lower()] = dll_exports(f.read(), path)
        except (OSError, PeError) as e:
            raise error("E0603", f"cannot read library '{path}': {e}") from None
    return dlls


def _read_inputs(objects, names=None) -> list[ObjectFile]:
    out = read_inputs(objects, read_coff, CoffError, names)
    for o in out:
        if o.machine != IMAGE_FILE_MACHINE_AMD64:
            raise error("E0600", f"{o.name}: not an x64 COFF object")
    return out


class PeLinker:
    def __init__(self, objs: list[ObjectFile], dlls: dict[str, frozenset[str]]) -> None:
        self.objs, self.dlls = objs, dlls
        self.defs: dict[str, tuple[int, Symbol]] = {}
        self.syms = [{s.name: s for s in reversed(o.symbols)} for o in objs]
        for i, o in enumerate(objs):   # named symbols win over same-named section symbols
            for s in o.symbols:
                if s.type != STT_SECTION:
                    self.syms[i][s.name] = s
        self.imports: dict[str, str] = {}        # name -> dll
        self.thunks: list[str] = []
        self.pointer_slots: list[str] = []       # defined names reached through __imp_

    # -- resolution -----------------------------------------------------------------------
    def resolve(self) -> None:
        for i, o in enumerate(self.objs):
            for s in o.symbols:
                if not s.defined or s.is_local or s.type == STT_SECTION:
                    continue
                prev = self.defs.get(s.name)
                if prev is None or (prev[1].bind == STB_WEAK and s.bind != STB_WEAK):
                    self.defs[s.name] = (i, s)
                elif s.bind != STB_WEAK and prev[1].bind != STB_WEAK:
                    raise error("E0602", f"duplicate definition of symbol '{s.name}' in "
                                f"{self.objs[prev[0]].name} and {o.name}")
        thunks, slots = set(), set()
        for i, o in enumerate(self.objs):
            for sec in o.sections.values():
                for r in sec.relocs:
                    sym = self.syms[i].get(r.symbol)
                    if sym is None:
                        raise error("E0600", f"{o.name}: relocation names unknown "
                                    f"'{r.symbol}'")
                    if sym.defined or r.symbol in self.defs:
                        continue
                    if r.symbol.startswith(IMP_PREFIX):
                        base = r.symbol[len(IMP_PREFIX):]
                        if base in self.defs:
                            slots.add(base)
                        else:
                            self._import(base, o)
                    else:
                        self._import(r.symbol, o)
                        thunks.add(r.symbol)
        self.thunks, self.pointer_slots = sorted(thunks), sorted(slots)

    def _import(self, name: str, obj: ObjectFile) -> None:
        if name in self.imports:
            return
        for dll, names in self.dlls.items():
            if name in names:
                self.imports[name] = dll
                return
        if name == "main":
            raise missing_main()
        raise error("E0601", f"undefined symbol '{name}' referenced by {obj.name}",
                    help="not defined by any input object nor exported by " +
                         ", ".join(self.dlls) + "; name its DLL by path with -l")

    # -- layout -----------------------------------------------------------------------------
    def merge(self) -> None:
        self.out = {k: bytearray() for k in _KINDS}
        self.bss = 0
        self.place: dict[tuple[int, str], tuple[str, int]] = {}
        self.align = {k: 16 for k in _KINDS}
        for i, o in enumerate(self.objs):
            for sec in o.sections.values():
                kind = _kind(sec)
                self.align[kind] = max(self.align[kind], sec.align)
                if kind == ".bss":
                    self.bss += (-self.bss) % sec.align
                    self.place[(i, sec.name)] = (kind, self.bss)
                    self.bss += sec.size
                    continue
                buf = self.out[kind]
                fill = 0xCC if kind == ".text" else 0
                buf += bytes([fill]) * ((-len(buf)) % sec.align)
                self.place[(i, sec.name)] = (kind, len(buf))
                buf += sec.data
        text = self.out[".text"]
        text += b"\xcc" * ((-len(text)) % 16)
        self.thunk_at = len(text)
        text += bytes(PLT_ENTRY_SIZE * len(self.thunks))
        data = self.out[".data"]
        data += bytes((-len(data)) % 8)
        self.slot_at = len(data)
        data += bytes(8 * len(self.pointer_slots))

    def layout(self) -> None:
        self.imp = pe_image.ImportTable(self.imports)
        sections = [pe_image.Sec(".text", pe_image.TEXT, self.out[".text"]),
                    pe_image.Sec(".rdata", pe_image.RDATA, self.out[".rdata"]),
                    pe_image.Sec(".data", pe_image.DATA, self.out[".data"]),
                    pe_image.Sec(".bss", pe_image.BSS, bytearray(), self.bss),
                    pe_image.Sec(".idata", pe_image.DATA, bytearray(self.imp.size))]
        self.secs = {s.name: s for s in sections if s.vsize or s.name == ".text"}
        pe_image.assign_rvas(list(self.secs.values()))
        if ".idata" in self.secs:
            self.imp.fill(self.secs[".idata"])

    def rva(self, i: int, name: str) -> int:
        """The RVA a relocation in object i naming `name` refers to."""
        sym = self.syms[i][name]
        if sym.defined:
            kind, off = self.place[(i, sym.section)]
            return self.secs[kind].rva + off + sym.value
        if name in self.defs:
            j, s = self.defs[name]
            kind, off = self.place[(j, s.section)]
            return self.secs[kind].rva + off + s.value
        if name.startswith(IMP_PREFIX):
            base = name[len(IMP_PREFIX):]
            if base in self.defs:
                return self.secs[".data"].rva + self.slot_at + \
                    8 * self.pointer_slots.index(base)
            return self.imp.iat_rva(base)
        return self.secs[".text"].rva + self.thunk_at + \
            PLT_ENTRY_SIZE * self.thunks.index(name)

    # -- contents ---------------------------------------------------------------------------
    def relocate(self) -> list[int]:
        """Apply every relocation; the RVAs of ADDR64 fields (base relocations)."""
        dir64 = []
        text = self.secs[".text"]
        for k, name in enumerate(self.thunks):
            at = self.thunk_at + PLT_ENTRY_SIZE * k
            text.data[at:at + PLT_ENTRY_SIZE] = plt_entry(text.rva + at, self.imp.iat_rva(name))
        for k, name in enumerate(self.pointer_slots):
            j, s = self.defs[name]
            kind, off = self.place[(j, s.section)]
            at = self.slot_at + 8 * k
            addr = IMAGE_BASE + self.secs[kind].rva + off + s.value
            self.secs[".data"].data[at:at + 8] = addr.to_bytes(8, "little")
            dir64.append(self.secs[".data"].rva + at)
        for i, o in enumerate(self.objs):
            for sec in o.sections.values():
                if not sec.relocs:
                    continue
                kind, base = self.place[(i, sec.name)]
                out = self.secs[kind]
                for r in sec.relocs:
                    place = out.rva + base + r.offset
                    target = self.rva(i, r.symbol)
                    at = base + r.offset
                    if r.type == IMAGE_REL_AMD64_ADDR64:
                        out.data[at:at + 8] = struct.pack("<Q", (IMAGE_BASE + target + r.addend)
                                                          & (1 << 64) - 1)
                        dir64.append(place)
                        continue
                    if IMAGE_REL_AMD64_REL32 <= r.type <= IMAGE_REL_AMD64_REL32 + 5:
                        extra = r.type - IMAGE_REL_AMD64_REL32
                        value = target + r.addend - (place + 4 + extra)
                    elif r.type == IMAGE_REL_AMD64_ADDR32NB:
                        value = target + r.addend
                    else:
                        raise error("E0605", f"{o.name}: unsupported COFF relocation type "
                                    f"{r.type} against '{r.symbol}' in {sec.name}")
                    if not -(1 << 31) <= value < (1 << 31):
                        raise error("E0605", f"{o.name}: relocation against '{r.symbol}' "
                                    f"at {sec.name}+{r.offset:#x} does not fit in 32 bits")
                    out.data[at:at + 4] = struct.pack("<i", value)
        return dir64

    def build(self) -> bytes:
        self.resolve()
        if ENTRY not in self.defs:
            raise error("E0601", f"undefined entry symbol '{ENTRY}'")
        self.merge()
        self.layout()
        dir64 = self.relocate()
        j, s = self.defs[ENTRY]
        kind, off = self.place[(j, s.section)]
        entry = self.secs[kind].rva + off + s.value
        return pe_image.write_image(list(self.secs.values()), self.imp, dir64, entry)


def link_pe(objects, libraries=(), output: str | None = None, link_args=(),
            names=None) -> bytes:
    extra, dirs, _runpath = parse_link_args(list(link_args))
    objs = _read_inputs(objects, names)
    if not any(s.name == ENTRY and s.defined and not s.is_local
               for o in objs for s in o.symbols):
        objs.append(start_object())
    image = PeLinker(objs, _load_dlls(list(libraries) + extra, dirs)).build()
    if output is not None:
        write_output(output, image)
    return image
