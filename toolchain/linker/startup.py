"""The synthesised `_start` entry point linked in when no input object defines `_start`.

It calls `__libc_start_main(main, argc, argv, init=0, fini=0, rtld_fini=rdx, stack_end)`,
which runs constructors, calls main and passes its return value to exit().

The bytes were produced by our Assembler from tests/linker/startup_source.py (the linker
sits below the code generator in DESIGN.md's layers, so it cannot import it);
tests/linker/test_startup.py re-assembles that source and fails if these bytes drift.
    xor ebp, ebp; mov r9, rdx; pop rsi; mov rdx, rsp; and rsp, -16; push rax; push rsp
    xor r8d, r8d; xor ecx, ecx; lea rdi, [rip + main]; call __libc_start_main; hlt
"""
from __future__ import annotations

from .elf_consts import R_X86_64_PC32, R_X86_64_PLT32, STT_FUNC
from .objfile import ObjectFile, Reloc, Symbol, section_symbol, standard_section

START_CODE = bytes.fromhex(
    "31ed4989d15e4889e24883e4f050544531c031c9488d3d00000000e800000000f4")
START_RELOCS = (
    Reloc(23, R_X86_64_PC32, "main", -4),
    Reloc(28, R_X86_64_PLT32, "__libc_start_main", -4),
)


def start_object() -> ObjectFile:
    """A fresh relocatable object defining global `_start` (needs `main`, libc)."""
    text = standard_section(".text")
    text.data = bytearray(START_CODE)
    text.relocs = list(START_RELOCS)
    obj = ObjectFile(sections={".text": text}, name="<startup>")
    obj.symbols = [section_symbol(".text"),
                   Symbol("_start", ".text", 0, len(START_CODE), type=STT_FUNC),
                   Symbol("main", None), Symbol("__libc_start_main", None)]
    return obj
