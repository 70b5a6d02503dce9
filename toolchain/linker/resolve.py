"""Global symbol resolution across input objects and shared libraries.

Rules: a global or weak definition in an object wins over any library; two strong global
definitions are an error (E0602), a strong one replaces a weak one. An undefined reference
that no object defines is imported from the first listed library whose .dynsym defines it
(E0601 names the symbol and the first object referencing it when none does); an undefined
weak reference nobody defines resolves to address 0. Thread-local library symbols cannot be
imported (E0604). Functions (STT_FUNC, STT_GNU_IFUNC) go through the PLT; everything else is
data and must be reached through the GOT (or an R_X86_64_64 word in writable data).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..compiler.diagnostics import error
from .dynamic import Import
from .elf_consts import STB_WEAK, STT_FUNC, STT_GNU_IFUNC, STT_SECTION, STT_TLS
from .elf_reader import SharedLibrary
from .objfile import ObjectFile, Symbol


@dataclass
class Resolution:
    definitions: dict[str, tuple[int, Symbol]] = field(default_factory=dict)
    imports: dict[str, Import] = field(default_factory=dict)
    weak_undefined: set[str] = field(default_factory=set)


def _define(res: Resolution, index: int, obj: ObjectFile, sym: Symbol,
            objects: list[ObjectFile]) -> None:
    prev = res.definitions.get(sym.name)
    if prev is None or (prev[1].bind == STB_WEAK and sym.bind != STB_WEAK):
        res.definitions[sym.name] = (index, sym)
    elif sym.bind != STB_WEAK and prev[1].bind != STB_WEAK:
        raise error("E0602", f"duplicate definition of symbol '{sym.name}' in "
                    f"{objects[prev[0]].name} and {obj.name}")


def resolve(objects: list[ObjectFile], libraries: list[SharedLibrary]) -> Resolution:
    res = Resolution()
    for i, obj in enumerate(objects):
        for sym in obj.symbols:
            if sym.defined and not sym.is_local and sym.type != STT_SECTION:
                _define(res, i, obj, sym, objects)
    for obj in objects:
        for sym in obj.symbols:
            if sym.defined or sym.name in res.definitions or sym.name in res.imports:
                continue
            imp = _import(sym, obj, libraries)
            if imp is None:
                res.weak_undefined.add(sym.name)
            else:
                res.imports[sym.name] = imp
    return res


def _import(sym: Symbol, obj: ObjectFile, libraries: list[SharedLibrary]) -> Import | None:
    for lib in libraries:
        found = lib.symbols.get(sym.name)
        if found is None:
            continue
        if found.type == STT_TLS:
            raise error("E0604", f"symbol '{sym.name}' (referenced by {obj.name}) is "
                        f"thread-local in {lib.soname}; TLS imports are not supported")
        return Import(sym.name, found.type in (STT_FUNC, STT_GNU_IFUNC), lib.soname)
    if sym.bind == STB_WEAK:
        return None
    if sym.name == "main":
        raise missing_main()
    searched = ", ".join(lib.soname for lib in libraries) or "no libraries"
    raise error("E0601", f"undefined symbol '{sym.name}' referenced by {obj.name}",
                help=f"not defined by any input object nor by {searched}; "
                     "add the library with -l")


def missing_main():
    """The start-up code calls `main`: without it the program is a library, not an
    executable, and "add the library with -l" would mislead."""
    return error("E0601", "the program has no `main` function",
                 help="an executable starts at `fn main() -> int32 { ... }`; to compile "
                      "code without one, use --emit-obj (a library) or, for kernels, "
                      "--emit-ptx or --emit-spirv")
