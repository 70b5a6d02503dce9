"""`import_str "path"`: embed a file's bytes as a string literal at compile time.

The path is used exactly as written (no extension is added) and looked up like an import:
an absolute path as is; `std/...` under the standard library root; `name/rest` under a
`mettle.deps` root called `name`; then relative to the importing file's directory, each
`-I` directory and the current directory. The bytes are taken verbatim; like every string
literal they are NUL-terminated (the NUL is not counted in `.length`) and read-only.
Errors: E0101 when no candidate exists, E0102 when the file cannot be read.
"""
from __future__ import annotations

import os

from . import ast as A
from .modules import candidates, stdlib_root


def embed_candidates(spec: str, importer: str, include_dirs, std_root: str,
                     cwd: str) -> list[str]:
    """The paths an import would try for `spec`, with the path used exactly as written."""
    return candidates(spec, importer, include_dirs, std_root, cwd, exact=True)


def resolve_embeds(modules: list[A.Module], include_dirs, stdlib_dir, bag) -> None:
    """Fill every ImportStr's bytes (modules as loaded, each with its `embeds`)."""
    if not any(m.embeds for m in modules):
        return
    cwd = os.getcwd()
    std_root = stdlib_root(stdlib_dir, cwd)
    for m in modules:
        for node in m.embeds:
            tried = embed_candidates(node.path, node.span.file, include_dirs, std_root, cwd)
            found = next((p for p in tried if os.path.isfile(p)), None)
            if found is None:
                bag.error("E0101", f"could not resolve embedded file '{node.path}'",
                          node.span, help="looked next to the importing file, in -I dirs, "
                          "mettle.deps roots, the stdlib root and the current directory")
                continue
            try:
                with open(found, "rb") as f:
                    node.value = f.read()
            except OSError as e:
                bag.error("E0102", f"cannot read embedded file '{node.path}': {e.strerror}",
                          node.span)
