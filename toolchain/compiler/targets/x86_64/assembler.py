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
                                   STB_LOCAL)
from ....linker.objbuilder import ObjectBuilder
from ....linker.objfile import Reloc
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


class Assembler(ObjectBuilder):
    """x86-64 instructions into an ObjectBuilder (module docstring: the contract)."""
    CODE_FILL = b"\x90"   # nop padding in code

    # -- code and data ----------------------------------------------------------------------
    def emit(self, mnemonic: str, *operands: Operand) -> Encoded:
        insn = encode(mnemonic, *operands)
        if insn.ref is not None:
            r = insn.ref
            self.pending.append(_Pending(self.current.name, self.offset + r.offset, r.sym,
                                         r.addend, r.kind, insn))
        self._append(insn.data)
        return insn

    def pointer(self, sym: str, addend: int = 0) -> None:
        """An 8-byte absolute address of `sym` (R_X86_64_64)."""
        self.current.relocs.append(Reloc(self.offset, R_X86_64_64, sym, addend))
        self._append(bytes(8))

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
