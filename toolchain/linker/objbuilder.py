"""Building an `ObjectFile` from code and data: sections, labels, symbols, fixups.

    class Assembler(ObjectBuilder):      # a target's assembler (x86_64, arm64)
        def emit(...)      encode an instruction, append its bytes, record fixups
        def _resolve(p)    patch a fixup in place or turn it into a relocation
        def _localise(r)   a relocation against a local label -> its section symbol + offset
    asm.section(".text"); asm.function("main"); ...; obj = asm.finish()

This is the object-file side of an assembler (the linker's object model), shared by the host
targets; instruction encodings and relocation types stay in each target. Names starting with
".L" are local labels; other names from `label` are local symbols unless declared global.
"""
from __future__ import annotations

from ..compiler.diagnostics import error
from .elf_consts import SHT_NOBITS, STB_GLOBAL, STB_LOCAL, STT_FUNC, STT_NOTYPE, STT_OBJECT
from .objfile import ObjectFile, Section, Symbol, section_symbol, standard_section


class ObjectBuilder:
    """Accumulates code and data per section; `finish` resolves fixups into an object."""
    CODE_FILL = b"\0"       # one unit of padding inside .text (a target's nop)

    def __init__(self) -> None:
        self.sections: dict[str, Section] = {}
        self.labels: dict[str, tuple[str, int]] = {}  # name -> (section, offset)
        self.symbols: dict[str, Symbol] = {}  # declared symbols (type, binding, size)
        self.pending: list = []   # target-defined fixups, resolved by `_resolve`
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
        pad = (-self.offset) % n
        if self.current.name == ".text":
            unit = len(self.CODE_FILL)
            self._append(self.CODE_FILL * (pad // unit) + bytes(pad % unit))
        else:
            self._append(bytes(pad))

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
