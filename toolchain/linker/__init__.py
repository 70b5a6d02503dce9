"""The Mettle linker. Driver entry point:

    link_executable(objects, libraries=(), link_args=()) -> bytes

A thin wrapper over link.link (see its CONTRACT), or over pe_link.link_pe for x64 COFF
objects (Windows; see its CONTRACT): libc.so.6 is always linked; `libraries`
are `-l` names ("cuda", "dl"), sonames or paths; `link_args` may also hold `-lNAME`/`-l NAME`,
`-L`, `-rpath`, and bare shared-library paths ("/path/libfoo.so", "libfoo.so.1"), which are
taken as libraries rather than rejected.
"""
from __future__ import annotations


def _split_link_args(link_args) -> tuple[list[str], list[str]]:
    libs, rest = [], []
    for a in link_args:
        if not a.startswith("-") and (".so" in a or "/" in a or a.lower().endswith(".dll")):
            libs.append(a)
        else:
            rest.append(a)
    return libs, rest


def link_executable(objects, libraries=(), link_args=(), names=None) -> bytes:
    """ELF objects (x86-64 or AArch64) give an ELF executable, x64 COFF objects a PE one.
    `names[i]` names input i in link errors (its file, or the source it came from)."""
    libs, rest = _split_link_args(list(link_args))
    objects = list(objects)
    if objects and isinstance(objects[0], (bytes, bytearray)) and objects[0][:2] == b"\x64\x86":
        from .pe_link import link_pe
        return link_pe(objects, list(libraries) + libs, None, rest, names)
    from .link import link
    return link(objects, list(libraries) + libs, None, rest, names)


__all__ = ["link_executable"]
