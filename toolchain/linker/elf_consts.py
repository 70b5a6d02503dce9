"""ELF64 constants (names as in the System V gABI and the x86-64 psABI) and struct layouts.

Only what the writer, reader and linker use. Struct formats are little-endian ELF64.
"""
from __future__ import annotations

import struct

# e_ident / header
ELFMAG = b"\x7fELF"
ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_SYSV = 2, 1, 1, 0
ET_REL, ET_EXEC, ET_DYN = 1, 2, 3
EM_X86_64 = 62
EM_AARCH64 = 183

# section types and flags
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA = 0, 1, 2, 3, 4
SHT_HASH, SHT_DYNAMIC, SHT_NOTE, SHT_NOBITS, SHT_DYNSYM = 5, 6, 7, 8, 11
SHT_GNU_HASH, SHT_GNU_VERSYM = 0x6FFFFFF6, 0x6FFFFFFF
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_INFO_LINK = 0x1, 0x2, 0x4, 0x40
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2

# symbols
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_TLS = 0, 1, 2, 3, 4, 6
STT_GNU_IFUNC = 10
STV_DEFAULT = 0

# program headers
PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_PHDR = 0, 1, 2, 3, 6
PT_GNU_STACK = 0x6474E551
PF_X, PF_W, PF_R = 1, 2, 4

# dynamic tags
DT_NULL, DT_NEEDED, DT_PLTRELSZ, DT_PLTGOT, DT_HASH, DT_STRTAB, DT_SYMTAB = 0, 1, 2, 3, 4, 5, 6
DT_RELA, DT_RELASZ, DT_RELAENT, DT_STRSZ, DT_SYMENT = 7, 8, 9, 10, 11
DT_SONAME, DT_DEBUG, DT_PLTREL, DT_JMPREL, DT_BIND_NOW = 14, 21, 20, 23, 24
DT_FLAGS, DT_RUNPATH, DT_FLAGS_1 = 30, 29, 0x6FFFFFFB
DF_BIND_NOW, DF_1_NOW = 0x8, 0x1

# x86-64 relocation types
R_X86_64_NONE, R_X86_64_64, R_X86_64_PC32, R_X86_64_GOT32, R_X86_64_PLT32 = 0, 1, 2, 3, 4
R_X86_64_COPY, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT, R_X86_64_RELATIVE = 5, 6, 7, 8
R_X86_64_GOTPCREL, R_X86_64_32, R_X86_64_32S, R_X86_64_PC64 = 9, 10, 11, 24
R_X86_64_GOTPCRELX, R_X86_64_REX_GOTPCRELX = 41, 42

# AArch64 relocation types (ELF for the Arm 64-bit Architecture, "AAELF64")
R_AARCH64_NONE, R_AARCH64_ABS64, R_AARCH64_ABS32, R_AARCH64_PREL32 = 0, 257, 258, 261
R_AARCH64_ADR_PREL_PG_HI21, R_AARCH64_ADD_ABS_LO12_NC = 275, 277
R_AARCH64_LDST8_ABS_LO12_NC, R_AARCH64_CONDBR19 = 278, 280
R_AARCH64_JUMP26, R_AARCH64_CALL26 = 282, 283
R_AARCH64_LDST16_ABS_LO12_NC, R_AARCH64_LDST32_ABS_LO12_NC = 284, 285
R_AARCH64_LDST64_ABS_LO12_NC, R_AARCH64_LDST128_ABS_LO12_NC = 286, 299
R_AARCH64_ADR_GOT_PAGE, R_AARCH64_LD64_GOT_LO12_NC = 311, 312
R_AARCH64_COPY, R_AARCH64_GLOB_DAT, R_AARCH64_JUMP_SLOT, R_AARCH64_RELATIVE = 1024, 1025, \
    1026, 1027

RELOC_NAMES = {v: k for k, v in dict(globals()).items() if k.startswith("R_X86_64_")}
AARCH64_RELOC_NAMES = {v: k for k, v in dict(globals()).items()
                       if k.startswith("R_AARCH64_")}

# struct layouts
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # 64 bytes
SHDR = struct.Struct("<IIQQQQIIQQ")  # 64 bytes
PHDR = struct.Struct("<IIQQQQQQ")  # 56 bytes
SYM = struct.Struct("<IBBHQQ")  # 24 bytes
RELA = struct.Struct("<QQq")  # 24 bytes
DYN = struct.Struct("<qQ")  # 16 bytes


def ident() -> bytes:
    """e_ident for a little-endian ELF64 System V object."""
    return ELFMAG + bytes([ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_SYSV]) + bytes(8)


def r_info(sym: int, rtype: int) -> int:
    return (sym << 32) | rtype


def st_info(bind: int, typ: int) -> int:
    return (bind << 4) | typ
