"""Find and read the shared libraries a program links against (`-l` names, sonames, paths).

Search order: directories from `-L`, then the standard multiarch directories. For `-l NAME`
the candidates are `libNAME.so` (an ELF shared object, or a GNU ld script whose first
GROUP/INPUT file is used, as on Debian where libc.so/libm.so are scripts), then the
`libNAME.so.N` file with the highest version. A name containing ".so" or a "/" is taken as a
file name or path. The executable records each library's DT_SONAME in DT_NEEDED.
"""
from __future__ import annotations

import os
import re

from .elf_reader import ElfError, SharedLibrary, read_shared_library

STANDARD_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                 "/lib", "/usr/lib")


class LibraryError(ValueError):
    pass


def _version_key(path: str) -> tuple[int, ...]:
    tail = path.rsplit(".so.", 1)[-1]
    return tuple(int(p) if p.isdigit() else -1 for p in tail.split("."))


def _from_script(path: str) -> str | None:
    """The first non-AS_NEEDED file named in a GNU ld script's GROUP(...) or INPUT(...)."""
    with open(path, "rb") as f:
        text = f.read(65536).decode("utf-8", "replace")
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"AS_NEEDED\s*\([^)]*\)", " ", text)
    m = re.search(r"\b(?:GROUP|INPUT)\s*\(([^)]*)\)", text)
    if not m:
        return None
    files = [w for w in m.group(1).replace(",", " ").split() if ".so" in w]
    return files[0] if files else None


def _is_elf(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def find_library(name: str, search_dirs: list[str], standard=STANDARD_DIRS) -> str:
    """The path of the shared object for `-l name` (or for a soname/path); `standard` is
    the target's own library directories (arch.py)."""
    dirs = list(search_dirs) + [d for d in standard if d not in search_dirs]
    if "/" in name:
        if os.path.isfile(name):
            return name
        raise LibraryError(f"library file '{name}' not found")
    if ".so" in name:
        for d in dirs:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                return p
        raise LibraryError(f"library '{name}' not found in {', '.join(dirs)}")
    for d in dirs:
        p = os.path.join(d, f"lib{name}.so")
        if os.path.isfile(p):
            if _is_elf(p):
                return p
            target = _from_script(p)
            if target and os.path.isfile(target):
                return target
        versioned = [os.path.join(d, f) for f in _listdir(d)
                     if f.startswith(f"lib{name}.so.")]
        if versioned:
            return max(sorted(versioned), key=_version_key)
    raise LibraryError(f"cannot find library -l{name} in {', '.join(dirs)}")


def _listdir(d: str) -> list[str]:
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


def load_library(name: str, search_dirs: list[str], standard=STANDARD_DIRS) -> SharedLibrary:
    path = find_library(name, search_dirs, standard)
    try:
        with open(path, "rb") as f:
            return read_shared_library(f.read(), path)
    except (OSError, ElfError) as e:
        raise LibraryError(f"cannot read library '{path}': {e}") from None
