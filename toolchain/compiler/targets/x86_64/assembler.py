"""The x86-64 assembler: sections, labels, symbols, fixups and relocations -> ObjectFile.

CONTRACT FOR THE INSTRUCTION SELECTOR
-------------------------------------
    asm = Assembler()
    asm.section(".text")                       # .text .rodata .data .bss (or any name)
    asm.function("main")                       # global STT_FUNC symbol here (local=True: static)
    asm.emit("push", RBP)                      # Intel operand order, destination first
    asm.emit("mov", RAX, Mem(RBP, disp=-8))    # operands: Reg, Imm, Mem, Sym (operands.py)
    asm.emit("call", Sym("puts"))              # external function: R_X86_64_PLT32
    asm.emit("mov", RAX, rip("stdout", got=True))  # external data: load its address from
    asm.emit("mov", RDI, Mem(RAX))                 # the GOT (REX_GOTPCRELX), then use it
    asm.emit("lea", RDI, rip(".LC0"))          # our own data: R_X86_64_PC32 (or a local fixup)
    asm.emit("jne", Sym(".L3")); asm.label(".L3")
    asm.end_symbol("main")                     # sets st_size
    asm.section(".rodata"); asm.label(".LC0"); asm.ascii(b"hi\\0")
    asm.section(".data"); asm.data_symbol("table"); asm.pointer("main")   # R_X86_64_64
    asm.section(".bss"); asm.data_symbol("buf"); asm.reserve(64)
    obj = asm.finish()                         # -> linker.objfile.ObjectFile
    data = toolchain.linker.elf_writer.write_object(obj)   # the .o bytes

Relocation rules (what the linker guarantees to handle):
- calls/jumps to any symbol not defined in the same section: R_X86_64_PLT32;
- RIP-relative data `rip(sym)`: R_X86_64_PC32, only for symbols defined in some object;
- `rip(sym, got=True)`: R_X86_64_REX_GOTPCRELX (mov with REX), R_X86_64_GOTPCRELX (other
  mov/call/jmp) or R_X86_64_GOTPCREL; REQUIRED for data imported from shared libraries
  (glibc `stdout`), allowed for anything;
- `pointer(sym)` in a data section: R_X86_64_64 (imported symbols become dynamic relocs).
Branches and RIP references to a label in the same section are resolved here (no relocation).
Names starting with ".L" are local labels; other names from `label` are local symbols unless
declared global. A relocation against a local name uses its section symbol + offset.
"""
from __future__ import annotations

from dataclasses import dataclass

from ....linker.elf_consts import (R_X86_64_64, R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX,
                                   R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_REX_GOTPCRELX,
                                   STB_GLOBAL, STB_LOCAL, STT_FUNC, STT_NOTYPE, STT_OBJECT,
                                   SHT_NOBITS)
from ....linker.objfile import (ObjectFile, Reloc, Section, Symbol, section_symbol,
                                standard_section)
from ...diagnostics import error
from .emit import BRANCH, GOT, Encoded, encode
from .operands import Operand


@dataclass
class _Pending:
    section: str
    field: int  # section offset of the 32-bit field
    sym: str
    addend: int
    kind: str
    insn: Encoded


class Assembler:
    """Accumulates code and data per section; `finish` resolves fixups into an object."""

    def __init__(self) -> None:
        self.sections: dict[str, Section] = {}
        self.labels: dict[str, tuple[str, int]] = {}  # name -> (section, offset)
        self.symbols: dict[str, Symbol] = {}  # declared symbols (type, binding, size)
        self.pending: list[_Pending] = []
        self.current: Section = self.section(".text")
        self._next_label = 0

    # -- sections and symbols -------------------------------------------------------------
    def section(self, name: str) -> Section:
        if name not in self.sections:
            self.sections[name] = standard_section(name)
        self.current = self.sections[name]
        return self.current

    @property
    def offset(self) -> int:
        return self.current.size

    def new_label(self, hint: str = "L") -> str:
        self._next_label += 1
        return f".{hint}{self._next_label}"

    def label(self, name: str) -> None:
        if name in self.labels:
            raise error("E0900", f"internal compiler error: label '{name}' defined twice")
        self.labels[name] = (self.current.name, self.offset)
        if name in self.symbols:
            self.symbols[name].section, self.symbols[name].value = self.current.name, self.offset

    def declare(self, name: str, kind: int = STT_NOTYPE, local: bool = False) -> Symbol:
        """Declare the type/binding of a symbol defined here (now or later) or imported."""
        sym = self.symbols.setdefault(name, Symbol(name, None))
        sym.type, sym.bind = kind, STB_LOCAL if local else STB_GLOBAL
        if name in self.labels:
            sym.section, sym.value = self.labels[name]
        return sym

    def function(self, name: str, local: bool = False) -> None:
        self.declare(name, STT_FUNC, local)
        self.label(name)

    def data_symbol(self, name: str, local: bool = False, align: int = 8) -> None:
        self.align(align)
        self.declare(name, STT_OBJECT, local)
        self.label(name)

    def end_symbol(self, name: str) -> None:
        section, start = self.labels[name]
        self.symbols[name].size = self.sections[section].size - start

    # -- code and data ----------------------------------------------------------------------
    def emit(self, mnemonic: str, *operands: Operand) -> Encoded:
        insn = encode(mnemonic, *operands)
        if insn.ref is not None:
            r = insn.ref
            self.pending.append(_Pending(self.current.name, self.offset + r.offset, r.sym,
                                         r.addend, r.kind, insn))
        self._append(insn.data)
        return insn

    def _append(self, data: bytes) -> None:
        if self.current.type == SHT_NOBITS:
            if any(data):
                raise error("E0900", f"internal compiler error: data in {self.current.name}")
            self.current.nobits_size += len(data)
        else:
            self.current.data += data

    def ascii(self, data: bytes) -> None:
        self._append(bytes(data))

    def int(self, value: int, size: int) -> None:
        self._append((value & ((1 << 8 * size) - 1)).to_bytes(size, "little"))

    def reserve(self, size: int) -> None:
        self._append(bytes(size))

    def align(self, n: int) -> None:
        self.current.align = max(self.current.align, n)
        fill = b"\x90" if self.current.name == ".text" else b"\0"  # nop padding in code
        self._append(fill * ((-self.offset) % n))

    def pointer(self, sym: str, addend: int = 0) -> None:
        """An 8-byte absolute address of `sym` (R_X86_64_64)."""
        self.current.relocs.append(Reloc(self.offset, R_X86_64_64, sym, addend))
        self._append(bytes(8))

    # -- finishing ----------------------------------------------------------------------------
    def finish(self) -> ObjectFile:
        for p in self.pending:
            self._resolve(p)
        for sec in self.sections.values():
            sec.relocs = [self._localise(r) for r in sec.relocs]
        used = {r.symbol for s in self.sections.values() for r in s.relocs}
        obj = ObjectFile(sections=dict(self.sections))
        obj.symbols = [section_symbol(n) for n in self.sections]
        obj.symbols += [s for s in self.symbols.values() if s.defined or s.name in used]
        known = {s.name for s in obj.symbols}
        for name in sorted(used - known):
            if name in self.labels:  # a local label reached through the GOT
                section, offset = self.labels[name]
                obj.symbols.append(Symbol(name, section, offset, 0, STB_LOCAL))
            else:  # an external symbol
                obj.symbols.append(Symbol(name, None))
        return obj

    def _resolve(self, p: _Pending) -> None:
        target = self.labels.get(p.sym)
        if p.kind != GOT and target is not None and target[0] == p.section:
            value = target[1] + p.addend - p.field
            self.sections[p.section].data[p.field:p.field + 4] = value.to_bytes(4, "little",
                                                                                 signed=True)
            return
        self.sections[p.section].relocs.append(
            Reloc(p.field, _reloc_type(p), p.sym, p.addend))

    def _localise(self, r: Reloc) -> Reloc:
        """Relocations against local labels go through the section symbol (+ offset)."""
        sym = self.symbols.get(r.symbol)
        if r.symbol in self.labels and (sym is None or sym.bind == STB_LOCAL) \
                and r.type not in _GOT_TYPES:
            section, offset = self.labels[r.symbol]
            return Reloc(r.offset, r.type, section, r.addend + offset)
        return r


_GOT_TYPES = (R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX)


def _reloc_type(p: _Pending) -> int:
    if p.kind == BRANCH:
        return R_X86_64_PLT32
    if p.kind != GOT:
        return R_X86_64_PC32
    row = p.insn.row
    # The relaxable GOTPCRELX forms are defined for mov (8B), call/jmp (FF /2, /4) and the
    # ALU ops; REX_ is required when the instruction carries a REX prefix.
    if row.mn in ("mov", "call", "jmp"):
        has_rex = any(0x40 <= b <= 0x4F for b in p.insn.data[:2])
        return R_X86_64_REX_GOTPCRELX if has_rex and row.mn == "mov" else R_X86_64_GOTPCRELX
    return R_X86_64_GOTPCREL
