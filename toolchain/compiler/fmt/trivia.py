"""Comments and line breaks between tokens: the trivia the lexer skips.

The lexer drops whitespace and comments; its tokens keep line and column, so the text
between two tokens (a "gap") is exactly the skipped trivia. `scan_gaps` reads every gap
once and returns, for each token (and the final EOF), the comments before it and the line
breaks around them. Normal compilation never calls this.
"""
from __future__ import annotations

import re

from ..frontend.tokens import Token

_EDGE = re.compile(r"/\*|\*/")


class Comment:
    """One comment in a gap.

    `newlines_before`: line breaks between the previous token (or comment) and this one;
    `newlines_after`: line breaks between it and the next comment or token. `trailing`: it
    sits on the line of the previous token (`x = 1; // why`).
    """
    __slots__ = ("text", "is_line", "newlines_before", "newlines_after", "trailing",
                 "col", "line_indent")

    def __init__(self, text: str, is_line: bool, newlines_before: int, col: int,
                 line_indent: int):
        self.text = text
        self.is_line = is_line
        self.newlines_before = newlines_before
        self.newlines_after = 0
        self.trailing = False
        self.col = col                  # 0-based column in the source line
        self.line_indent = line_indent  # indentation width of that source line

    @property
    def ends_line(self) -> bool:
        """Nothing but a line break may follow it."""
        return self.is_line or self.newlines_after > 0


class Gap:
    __slots__ = ("comments", "newlines")

    def __init__(self) -> None:
        self.comments: list[Comment] = []
        self.newlines = 0  # line breaks between the last comment (or token) and the token

    @property
    def forces_newline(self) -> bool:
        return any(c.ends_line or not c.trailing for c in self.comments)


def token_offsets(text: str, tokens: list[Token]) -> list[int]:
    """Absolute start offset of every token (columns count characters, BOM excluded)."""
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    if text.startswith("\ufeff"):
        starts[0] = 1
    return [starts[t.line - 1] + t.col - 1 for t in tokens]


def _indent_of(text: str, pos: int) -> int:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return len(line) - len(line.lstrip(" \t"))


def scan_gaps(text: str, tokens: list[Token]) -> list[Gap]:
    """One Gap per token (EOF included): the comments and line breaks before it."""
    offsets = token_offsets(text, tokens)
    gaps: list[Gap] = []
    prev_end = 1 if text.startswith("\ufeff") else 0
    for idx, (tok, start) in enumerate(zip(tokens, offsets)):
        gap = Gap()
        pos, newlines = prev_end, 0
        on_token_line = idx > 0
        while pos < start:
            if text[pos] == "\n":
                newlines += 1
                pos += 1
                continue
            is_line = text.startswith("//", pos)
            if not is_line and not text.startswith("/*", pos):
                pos += 1
                continue
            if is_line:
                end = text.find("\n", pos, start)
                end = start if end < 0 else end
            else:
                end = _block_end(text, pos)
            c = _comment(text, pos, end, is_line, newlines)
            c.trailing = on_token_line and newlines == 0
            on_token_line = c.trailing and not is_line
            if gap.comments:
                gap.comments[-1].newlines_after = newlines
            gap.comments.append(c)
            newlines, pos = 0, end
        if gap.comments:
            gap.comments[-1].newlines_after = newlines
        gap.newlines = newlines
        gaps.append(gap)
        prev_end = start + len(tok.text)
    return gaps


def _comment(text: str, start: int, end: int, is_line: bool, newlines: int) -> Comment:
    line_start = text.rfind("\n", 0, start) + 1
    return Comment(text[start:end].rstrip(), is_line, newlines, start - line_start,
                   _indent_of(text, start))


def _block_end(text: str, start: int) -> int:
    depth, i = 1, start + 2
    while depth:
        m = _EDGE.search(text, i)
        depth += 1 if m.group() == "/*" else -1
        i = m.end()
    return i
