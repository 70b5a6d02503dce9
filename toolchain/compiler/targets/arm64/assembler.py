"""The AArch64 assembler: the linker's ObjectBuilder (sections, labels, symbols) with
AArch64 instruction words, fixups and relocations.

    asm = Assembler()
    asm.function("main"); asm.emit("stp", FP, LR, Mem(SP, -16, "pre"))
    asm.emit("bl", Sym("puts"))                             # R_AARCH64_CALL26
    asm.emit("adrp", X[0], Page(".LC0")); asm.emit("add", X[0], X[0], Lo12(".LC0"))
    asm.emit("adrp", X[0], Page("stdout", got=True))        # R_AARCH64_ADR_GOT_PAGE
    asm.emit("ldr", X[0], Mem(X[0], lo12=Lo12("stdout", got=True)))  # LD64_GOT_LO12_NC
    asm.pointer("main")                                     # R_AARCH64_ABS64 (data)
Branches (b, b.cond, cbz/cbnz) to a label in the same section are resolved here; calls to
other symbols become CALL26/JUMP26 relocations (the linker routes imports through the PLT).
adrp/lo12 pairs always become relocations (against the section symbol for local labels), so
the linker, which knows the final addresses, computes pages. Objects are EM_AARCH64.
"""
from __future__ import annotations

from dataclasses import dataclass

from ....linker.elf_consts import (EM_AARCH64, R_AARCH64_ABS64, R_AARCH64_ADD_ABS_LO12_NC,
                                   R_AARCH64_ADR_GOT_PAGE, R_AARCH64_ADR_PREL_PG_HI21,
                                   R_AARCH64_CALL26, R_AARCH64_CONDBR19, R_AARCH64_JUMP26,
                                   R_AARCH64_LD64_GOT_LO12_NC, R_AARCH64_LDST8_ABS_LO12_NC,
                                   R_AARCH64_LDST16_ABS_LO12_NC, R_AARCH64_LDST32_ABS_LO12_NC,
                                   R_AARCH64_LDST64_ABS_LO12_NC)
from ....linker.objfile import ObjectFile, Reloc
from ...diagnostics import error
from ....linker.objbuilder import ObjectBuilder
from .encodings import Fixup, encode

RELOC_OF = {
    "jump26": R_AARCH64_JUMP26, "call26": R_AARCH64_CALL26, "condbr19": R_AARCH64_CONDBR19,
    "page21": R_AARCH64_ADR_PREL_PG_HI21, "gotpage21": R_AARCH64_ADR_GOT_PAGE,
    "add_lo12": R_AARCH64_ADD_ABS_LO12_NC, "got_lo12": R_AARCH64_LD64_GOT_LO12_NC,
    "ldst8_lo12": R_AARCH64_LDST8_ABS_LO12_NC, "ldst16_lo12": R_AARCH64_LDST16_ABS_LO12_NC,
    "ldst32_lo12": R_AARCH64_LDST32_ABS_LO12_NC, "ldst64_lo12": R_AARCH64_LDST64_ABS_LO12_NC,
}
GOT_TYPES = (R_AARCH64_ADR_GOT_PAGE, R_AARCH64_LD64_GOT_LO12_NC)
_BRANCH_BITS = {"jump26": 26, "call26": 26, "condbr19": 19}
NOP = 0xD503201F


@dataclass
class _Pending:
    section: str
    offset: int
    fix: Fixup


class Assembler(ObjectBuilder):
    CODE_FILL = NOP.to_bytes(4, "little")

    def emit(self, mnemonic: str, *operands) -> int:
        word, fix = encode(mnemonic, *operands)
        if fix is not None:
            self.pending.append(_Pending(self.current.name, self.offset, fix))
        self._append(word.to_bytes(4, "little"))
        return word

    def pointer(self, sym: str, addend: int = 0) -> None:
        """An 8-byte absolute address of `sym` (R_AARCH64_ABS64)."""
        self.current.relocs.append(Reloc(self.offset, R_AARCH64_ABS64, sym, addend))
        self._append(bytes(8))

    def finish(self) -> ObjectFile:
        obj = super().finish()
        obj.machine = EM_AARCH64
        return obj

    def _resolve(self, p: _Pending) -> None:
        target = self.labels.get(p.fix.sym)
        bits = _BRANCH_BITS.get(p.fix.kind)
        if bits is not None and target is not None and target[0] == p.section:
            delta = target[1] + p.fix.addend - p.offset
            if delta % 4 or not -(1 << bits + 1) <= delta < (1 << bits + 1):
                raise error("E0900", f"internal compiler error: branch to {p.fix.sym} "
                            "out of range")
            data = self.sections[p.section].data
            word = int.from_bytes(data[p.offset:p.offset + 4], "little")
            mask = (1 << bits) - 1
            shift = 0 if bits == 26 else 5
            word |= ((delta >> 2) & mask) << shift
            data[p.offset:p.offset + 4] = word.to_bytes(4, "little")
            return
        self.sections[p.section].relocs.append(
            Reloc(p.offset, RELOC_OF[p.fix.kind], p.fix.sym, p.fix.addend))

    def _localise(self, r: Reloc) -> Reloc:
        if r.type in GOT_TYPES:
            return r
        sym = self.symbols.get(r.symbol)
        if r.symbol in self.labels and (sym is None or sym.bind == 0):
            section, offset = self.labels[r.symbol]
            return Reloc(r.offset, r.type, section, r.addend + offset)
        return r
