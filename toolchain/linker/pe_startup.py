"""The Windows x64 runtime object, linked into every PE executable: the entry point
`mainCRTStartup` (when no object defines one) and weak printf-family definitions over
ucrtbase.dll's __stdio_common_vfprintf/__stdio_common_vsprintf (ucrtbase exports no printf:
the UCRT headers inline it). tests/pe/startup_source.py is the assembly source and explains
each routine; tests/pe/test_pe_link.py checks that these bytes are what our Assembler makes
of it (the linker may not import the code generator). Relocations are COFF REL32 with their
implicit addend (0).
"""
from __future__ import annotations

from .coff import IMAGE_FILE_MACHINE_AMD64, IMAGE_REL_AMD64_REL32
from .elf_consts import STB_GLOBAL, STB_WEAK, STT_FUNC
from .objfile import ObjectFile, Reloc, Symbol, section_symbol, standard_section

ENTRY = "mainCRTStartup"
START_CODE = bytes.fromhex(
    "4883ec28b901000000e800000000b901000000e800000000e800000000e8000000008b0048894424"
    "20e800000000488b108b4c2420e80000000089c1e800000000cc9090909090909090909090909090"
    "48894c240848895424104c894424184c894c24204883ec38b901000000e8000000004889c2488d44"
    "244848894424204c8b4424404531c931c9e8000000004883c438c390909090909090909090909090"
    "48894c240848895424104c894424184c894c24204883ec38488b542440488d44245048894424204c"
    "8b4424484531c931c9e8000000004883c438c390909090904883ec3848894c24284889542430b901"
    "000000e8000000004889c24c8b4424284c8b5424304c89d048894424204531c931c9e80000000048"
    "83c438c3909090904883ec384d89c24989d04889ca4c89d048894424204531c931c9e80000000048"
    "83c438c390909090909090909090909048894c240848895424104c894424184c894c24204883ec38"
    "488d442450488944242848c7442420000000004c8b4c244849c7c0ffffffff488b542440b9010000"
    "00e8000000004883c438c3909090909048894c240848895424104c894424184c894c24204883ec38"
    "488d442458488944242848c7442420000000004c8b4c24504c8b442448488b542440b902000000e8"
    "000000004883c438c3")
START_RELOCS = (
    Reloc(10, IMAGE_REL_AMD64_REL32, "_set_app_type", 0),
    Reloc(20, IMAGE_REL_AMD64_REL32, "_configure_narrow_argv", 0),
    Reloc(25, IMAGE_REL_AMD64_REL32, "_initialize_narrow_environment", 0),
    Reloc(30, IMAGE_REL_AMD64_REL32, "__p___argc", 0),
    Reloc(42, IMAGE_REL_AMD64_REL32, "__p___argv", 0),
    Reloc(54, IMAGE_REL_AMD64_REL32, "main", 0),
    Reloc(61, IMAGE_REL_AMD64_REL32, "exit", 0),
    Reloc(110, IMAGE_REL_AMD64_REL32, "__acrt_iob_func", 0),
    Reloc(138, IMAGE_REL_AMD64_REL32, "__stdio_common_vfprintf", 0),
    Reloc(210, IMAGE_REL_AMD64_REL32, "__stdio_common_vfprintf", 0),
    Reloc(244, IMAGE_REL_AMD64_REL32, "__acrt_iob_func", 0),
    Reloc(275, IMAGE_REL_AMD64_REL32, "__stdio_common_vfprintf", 0),
    Reloc(315, IMAGE_REL_AMD64_REL32, "__stdio_common_vfprintf", 0),
    Reloc(402, IMAGE_REL_AMD64_REL32, "__stdio_common_vsprintf", 0),
    Reloc(480, IMAGE_REL_AMD64_REL32, "__stdio_common_vsprintf", 0),)
# (name, offset, size); every symbol but the entry is weak (a program may define its own)
START_SYMBOLS = (
    ("mainCRTStartup", 0, 66),
    ("printf", 80, 67),
    ("fprintf", 160, 59),
    ("vprintf", 224, 60),
    ("vfprintf", 288, 36),
    ("sprintf", 336, 75),
    ("snprintf", 416, 73),)


def start_object() -> ObjectFile:
    text = standard_section(".text")
    text.data = bytearray(START_CODE)
    text.relocs = list(START_RELOCS)
    obj = ObjectFile(sections={".text": text}, name="<windows runtime>",
                     machine=IMAGE_FILE_MACHINE_AMD64)
    obj.symbols = [section_symbol(".text")]
    obj.symbols += [Symbol(name, ".text", off, size, STB_GLOBAL if name == ENTRY else STB_WEAK,
                           STT_FUNC) for name, off, size in START_SYMBOLS]
    obj.symbols += [Symbol(name, None) for name in sorted({r.symbol for r in START_RELOCS})
                    if name not in {s[0] for s in START_SYMBOLS}]
    return obj
