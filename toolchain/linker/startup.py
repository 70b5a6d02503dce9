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

from .elf_consts import (EM_AARCH64, R_AARCH64_ADD_ABS_LO12_NC, R_AARCH64_ADR_PREL_PG_HI21,
                         R_AARCH64_CALL26, R_X86_64_PC32, R_X86_64_PLT32, STT_FUNC)
from .objfile import ObjectFile, Reloc, Symbol, section_symbol, standard_section

START_CODE = bytes.fromhex(
    "31ed4989d15e4889e24883e4f050544531c031c9488d3d00000000e800000000f4")
START_RELOCS = (
    Reloc(23, R_X86_64_PC32, "main", -4),
    Reloc(28, R_X86_64_PLT32, "__libc_start_main", -4),
)


# AArch64 (glibc's start.S; source: tests/arm64/startup_source.py, checked by
# tests/arm64/test_arm64_link.py):
#   mov x29, xzr; mov x30, xzr; mov x5, x0; ldr x1, [sp]; add x2, sp, #8; mov x6, sp
#   adrp x0, main; add x0, x0, :lo12:main; mov x3, xzr; mov x4, xzr
#   bl __libc_start_main; udf #0
START_CODE_AARCH64 = bytes.fromhex(
    "fd031faafe031faae50300aae10340f9e2230091e60300910000009000000091e3031faae4031faa"
    "0000009400000000")
START_RELOCS_AARCH64 = (
    Reloc(24, R_AARCH64_ADR_PREL_PG_HI21, "main", 0),
    Reloc(28, R_AARCH64_ADD_ABS_LO12_NC, "main", 0),
    Reloc(40, R_AARCH64_CALL26, "__libc_start_main", 0),
)


def start_object(machine: int | None = None) -> ObjectFile:
    """A fresh relocatable object defining global `_start` (needs `main`, libc)."""
    code, relocs = START_CODE, START_RELOCS
    if machine == EM_AARCH64:
        code, relocs = START_CODE_AARCH64, START_RELOCS_AARCH64
    text = standard_section(".text")
    text.data = bytearray(code)
    text.relocs = list(relocs)
    obj = ObjectFile(sections={".text": text}, name="<startup>")
    if machine is not None:
        obj.machine = machine
    obj.symbols = [section_symbol(".text"),
                   Symbol("_start", ".text", 0, len(code), type=STT_FUNC),
                   Symbol("main", None), Symbol("__libc_start_main", None)]
    return obj
