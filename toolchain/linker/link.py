"""Our linker: ELF64 relocatable objects + shared libraries -> dynamically linked executable.

CONTRACT
    link(objects: list[bytes | ObjectFile], libraries: list[str], output: str | None = None,
         link_args: list[str] = ()) -> bytes
  - `objects`: our relocatable objects (bytes are parsed with elf_reader.read_object).
  - `libraries`: `-l` names ("m", "dl"), sonames ("libcuda.so.1") or paths; libc.so.6 is
    always linked first. `link_args` accepts -lNAME, -l NAME, -LDIR, -L DIR, -rpath DIR,
    --rpath=DIR (DT_RUNPATH); anything else is error E0600.
  - `output`: written (mode 0755) when given; the bytes are returned either way.
  - If no object defines `_start`, startup.py's `_start` is linked in: it calls
    `__libc_start_main(main, argc, argv, ...)`, so the program defines `int main(...)`.
Output: non-PIE ET_EXEC at 0x400000, interpreter /lib64/ld-linux-x86-64.so.2 (AArch64
  objects: /lib/ld-linux-aarch64.so.1, 64 KiB segment alignment, PLT entries
  adrp/ldr/add/br x17 and R_AARCH64_* relocations, see arch.py); segments
  LOAD R (headers, .interp, .hash, .dynsym, .dynstr, .rela.dyn, .rela.plt, .rodata),
  LOAD RX (.plt, .text), LOAD RW (.dynamic, .got, .got.plt, .data, .bss), PT_DYNAMIC,
  PT_GNU_STACK (RW, non-executable). DT_FLAGS=BIND_NOW: every import is bound at load time.
  No symbol versions are recorded; glibc binds unversioned references to the base version.
Relocations the code generator may use (see x86_64/assembler.py):
  R_X86_64_PLT32 / PC32 to functions (imported functions go through a PLT entry);
  R_X86_64_PC32 / 32 / 32S / 64 to data defined in an object;
  R_X86_64_GOTPCREL / GOTPCRELX / REX_GOTPCRELX to anything (a GOT slot; imported symbols
  get R_X86_64_GLOB_DAT). Imported DATA (glibc `stdout`) must be reached through the GOT:
  a PC32 to it is error E0605 (no copy relocations). R_X86_64_64 in a writable section to
  an imported symbol becomes a dynamic R_X86_64_64 relocation.
Errors (CompileError): E0600 bad argument/input, E0601 undefined symbol, E0602 duplicate
definition, E0603 library not found, E0604 TLS import, E0605 bad/overflowing relocation.
Deterministic: output depends only on the inputs (no timestamps; tables in input or name
order).
"""
from __future__ import annotations

import os

from ..compiler.diagnostics import error
from .arch import BY_MACHINE, X86_64, Arch
from .elf_reader import ElfError, SharedLibrary, read_object
from .exe_layout import build_executable
from .libraries import LibraryError, load_library
from .objfile import ObjectFile
from .resolve import resolve
from .startup import start_object


def parse_link_args(args: list[str]) -> tuple[list[str], list[str], str | None]:
    """(extra -l libraries, -L search dirs, runpath) from command-line style arguments."""
    libs, dirs, runpath = [], [], None
    it = iter(args)
    for a in it:
        if a in ("-l", "-L", "-rpath", "--rpath"):
            val = next(it, None)
            if val is None:
                raise error("E0600", f"link argument '{a}' needs a value")
            a = {"-l": "-l", "-L": "-L"}.get(a, "--rpath=") + val
        if a.startswith("-l") and len(a) > 2:
            libs.append(a[2:])
        elif a.startswith("-L") and len(a) > 2:
            dirs.append(a[2:])
        elif a.startswith("--rpath=") and len(a) > len("--rpath="):
            runpath = a[len("--rpath="):]
        else:
            raise error("E0600", f"unsupported link argument '{a}'",
                        help="supported: -lNAME, -LDIR, -rpath DIR, --rpath=DIR")
    return libs, dirs, runpath


def _load_libraries(names: list[str], dirs: list[str], arch: Arch) -> list[SharedLibrary]:
    libs: list[SharedLibrary] = []
    for name in ["libc.so.6"] + names:
        try:
            lib = load_library(name, dirs, arch.lib_dirs)
        except LibraryError as e:
            raise error("E0603", str(e)) from None
        if lib.machine != arch.machine:
            raise error("E0603", f"library '{lib.path}' is not built for {arch.name}")
        if lib.soname not in {x.soname for x in libs}:
            libs.append(lib)
    return libs


def read_inputs(objects: list[bytes | ObjectFile], reader=read_object,
                failure: type[Exception] = ElfError, names=None) -> list[ObjectFile]:
    """Objects as ObjectFiles: bytes go through `reader` (ELF here, COFF for the PE linker);
    a `failure` it raises becomes E0600. `names[i]` (the object's file, or the source it was
    compiled from) is what link errors call input i; `<input i>` only when none is given."""
    out = []
    for i, o in enumerate(objects):
        if isinstance(o, ObjectFile):
            out.append(o)
            continue
        name = names[i] if names and i < len(names) and names[i] else f"<input {i}>"
        try:
            out.append(reader(bytes(o), name))
        except failure as e:
            raise error("E0600", f"cannot read input object {name}: {e}") from None
    return out


def _arch_of(objs: list[ObjectFile]) -> Arch:
    machines = {o.machine for o in objs}
    if len(machines) > 1:
        raise error("E0600", "input objects are for different machines: " +
                    ", ".join(f"{o.name} ({BY_MACHINE[o.machine].name})" for o in objs))
    return BY_MACHINE[machines.pop()] if machines else X86_64


def link(objects: list[bytes | ObjectFile], libraries: list[str], output: str | None = None,
         link_args: list[str] = (), names=None) -> bytes:
    """Link `objects` against libc (+ `libraries`) into an executable; see the module doc.
    The target machine (x86-64 or AArch64) is the one the objects are built for."""
    extra, dirs, runpath = parse_link_args(list(link_args))
    objs = read_inputs(objects, names=names)
    arch = _arch_of(objs)
    if not any(s.name == "_start" and s.defined and not s.is_local
               for o in objs for s in o.symbols):
        objs.append(start_object(arch.machine))
    libs = _load_libraries(list(libraries) + extra, dirs, arch)
    res = resolve(objs, libs)
    image = build_executable(objs, res, [lib.soname for lib in libs], runpath, arch)
    if output is not None:
        write_output(output, image)
    return image


def write_output(output: str, image: bytes) -> None:
    """Write an executable under a temporary name, then rename: never a partial file."""
    tmp = f"{output}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(image)
    os.chmod(tmp, 0o755)
    os.replace(tmp, output)
