"""Formatting the ```mettle examples of a Markdown page (`mettle fmt page.md`).

Each fenced block whose info string starts with `mettle` is formatted on its own; a block
that does not parse as a whole program (a fragment, or an example of an error) is left as
written. Everything outside the blocks is untouched.
"""
from __future__ import annotations

import re

from ..diagnostics import CompileError
from .format import format_source

_BLOCK = re.compile(r"^(```mettle[^\n]*\n)(.*?)^(```)", re.M | re.S)


def format_markdown(text: str, path: str = "<input>") -> str:
    def one(m: re.Match) -> str:
        line = text.count("\n", 0, m.start()) + 2
        try:
            body = format_source(m.group(2), f"{path}:{line}")
        except CompileError:
            body = m.group(2)
        return m.group(1) + body + m.group(3)
    return _BLOCK.sub(one, text)
