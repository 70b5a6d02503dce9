"""The Mettle linker. Driver entry point:

    link_executable(objects, libraries=(), link_args=()) -> bytes

A thin wrapper over link.link (see its CONTRACT): libc.so.6 is always linked; `libraries`
are `-l` names ("cuda", "dl"), sonames or paths; `link_args` may also hold `-lNAME`/`-l NAME`,
`-L`, `-rpath`, and bare shared-library paths ("/path/libfoo.so", "libfoo.so.1"), which are
taken as libraries rather than rejected.
"""
from __future__ import annotations


def _split_link_args(link_args) -> tuple[list[str], list[str]]:
    libs, rest = [], []
    for a in link_args:
        if not a.startswith("-") and (".so" in a or "/" in a):
            libs.append(a)
        else:
            rest.append(a)
    return libs, rest


def link_executable(objects, libraries=(), link_args=()) -> bytes:
    from .link import link
    libs, rest = _split_link_args(list(link_args))
    return link(list(objects), list(libraries) + libs, None, rest)


__all__ = ["link_executable"]
