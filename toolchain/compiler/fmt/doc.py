"""A small Wadler/Oppen-style document and its renderer.

A document is a nested list of parts: strings, `Tok` (a source token), `Line` (a space, or
nothing when soft, when its group fits on the line; else a line break), `HARD` (always a
line break), `Group` (laid out flat when it fits in the width, else broken), `Nest`
(relative indentation), `Indent` (absolute indentation), `Rebase` and `Hang` (a block
inside an expression) and `Suffix` (a trailing comment, written before the next line
break). A group holding a hard break or a trailing line comment
is always broken (`propagate`). Lines never end in spaces.
"""
from __future__ import annotations

INDENT = 4       # spaces per level
WIDTH = 100      # columns


class Line:
    __slots__ = ("soft",)

    def __init__(self, soft: bool):
        self.soft = soft


LINE = Line(False)
SOFT = Line(True)


class _Hard:
    __slots__ = ()


HARD = _Hard()


class _Break:
    __slots__ = ()


# Prints nothing; breaks every group around it (a comment that must end its line is there).
BREAK = _Break()


class Tok:
    __slots__ = ("text", "index")

    def __init__(self, text: str, index: int):
        self.text, self.index = text, index


class Group:
    __slots__ = ("parts", "broken")

    def __init__(self, parts: list, broken: bool = False):
        self.parts, self.broken = parts, broken


class Fill:
    """Items separated by lines, packed: a separator breaks only when the item after it
    would not fit on the line (`parts` alternates item, separator, item, ...)."""
    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts


class Nest:
    __slots__ = ("levels", "parts")

    def __init__(self, levels: int, parts: list):
        self.levels, self.parts = levels, parts


class Indent:
    __slots__ = ("level", "parts")

    def __init__(self, level: int, parts: list):
        self.level, self.parts = level, parts


class Rebase:
    """Parts laid out for absolute indentation `level` (a block inside an expression: a
    lambda body, a match), moved to start from the indentation of the line they are on."""
    __slots__ = ("level", "parts")

    def __init__(self, level: int, parts: list):
        self.level, self.parts = level, parts


class Hang:
    """Parts whose forced breaks do not break the groups around them: `f(fn() {` stays on
    its line and the lambda body hangs below it. Only its first line is measured."""
    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts


class Suffix:
    """A trailing comment. It keeps the column it had in the source (shifted with its
    line's indentation) while its line still starts with the same token, so hand-aligned
    comment columns survive; otherwise it follows the code after one space."""
    __slots__ = ("text", "col", "line_indent", "line_first")

    def __init__(self, text: str, col: int, line_indent: int, line_first: int):
        self.text, self.col = text, col
        self.line_indent, self.line_first = line_indent, line_first


class Aligned:
    """A comment on its own line continuing the trailing comment above: it starts in that
    comment's column."""
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def propagate(doc) -> bool:
    """Mark every group that holds a forced break as broken; True if `doc` holds one."""
    if isinstance(doc, list):
        found = False
        for part in doc:
            found = propagate(part) or found
        return found
    if doc is HARD or doc is BREAK or isinstance(doc, Suffix):
        return True
    if isinstance(doc, Group):
        if propagate(doc.parts):
            doc.broken = True
        return doc.broken
    if isinstance(doc, (Nest, Indent, Fill, Rebase)):
        return propagate(doc.parts)
    if isinstance(doc, Hang):
        propagate(doc.parts)
    return False


def _shift(doc, delta: int):
    """`doc` with every absolute indentation moved by `delta` levels."""
    if isinstance(doc, list):
        return [_shift(p, delta) for p in doc]
    if isinstance(doc, Group):
        return Group(_shift(doc.parts, delta), doc.broken)
    if isinstance(doc, Indent):
        return Indent(doc.level + delta, _shift(doc.parts, delta))
    if isinstance(doc, Nest):
        return Nest(doc.levels, _shift(doc.parts, delta))
    if isinstance(doc, Fill):
        return Fill(_shift(doc.parts, delta))
    if isinstance(doc, Hang):
        return Hang(_shift(doc.parts, delta))
    return doc                      # tokens, lines, comments, a nested Rebase (its own base)


_FLAT, _BREAK = 0, 1


class _Renderer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.cur: list[str] = []
        self.col = 0
        self.line_indent = 0
        self.line_first = -1        # index of the first token on the current line
        self.suffixes: list[Suffix] = []
        self.suffix_col = 0          # where the last trailing comment started

    def text(self, s: str) -> None:
        nl = s.rfind("\n")
        if nl >= 0:                 # a string literal spanning lines
            self.cur.append(s[:nl])
            self.lines.append("".join(self.cur))
            self.cur = [s[nl + 1:]]
            self.col = len(s) - nl - 1
        else:
            self.cur.append(s)
            self.col += len(s)

    def newline(self, indent: int) -> None:
        self.flush_suffixes()
        line = "".join(self.cur).rstrip()
        if line or (self.lines and self.lines[-1]):   # at most one blank line, none first
            self.lines.append(line)
        self.cur = [" " * indent]
        self.col = self.line_indent = indent
        self.line_first = -1

    def flush_suffixes(self) -> None:
        for s in self.suffixes:
            pad = 1
            if s.line_first == self.line_first and self.line_first >= 0:
                pad = max(1, s.col + self.line_indent - s.line_indent - self.col)
            self.suffix_col = self.col + pad
            self.text(" " * pad + s.text)
        self.suffixes = []

    def finish(self) -> str:
        self.flush_suffixes()
        self.lines.append("".join(self.cur).rstrip())
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        return "\n".join(self.lines) + "\n" if self.lines else ""


def _fits(next_cmd, rest: list, width: int) -> bool:
    cmds = [next_cmd]
    k = len(rest) - 1
    while width >= 0:
        if not cmds:
            if k < 0:
                return True
            cmds.append(rest[k])
            k -= 1
            continue
        ind, mode, d = cmds.pop()
        if isinstance(d, str):
            width -= len(d)
        elif isinstance(d, Tok):
            if "\n" in d.text:
                return True
            width -= len(d.text)
        elif isinstance(d, list):
            cmds.extend((ind, mode, p) for p in reversed(d))
        elif isinstance(d, Line):
            if mode == _BREAK:
                return True
            width -= 0 if d.soft else 1
        elif d is HARD:
            return True
        elif isinstance(d, Group):
            cmds.append((ind, _BREAK if d.broken else mode, d.parts))
        elif isinstance(d, (Nest, Indent, Rebase, Hang)):
            cmds.append((ind, mode, d.parts))
        elif isinstance(d, Fill):
            cmds.append((ind, mode, d.parts))
        elif isinstance(d, Aligned):
            width -= len(d.text)
    return False


def _fill(parts: list, ind: int, mode: int, stack: list, room: int) -> None:
    """Push the first item of a Fill, then its separator (flat when the next item fits on
    the line after the first one, else a line break), then the rest of the Fill."""
    if not parts:
        return
    if len(parts) >= 3:
        rest = Fill(parts[2:])
        two = (ind, _FLAT, [parts[0], parts[1], parts[2]])
        # the last item must also leave room for what follows it up to the next break
        after = stack if len(parts) == 3 else []
        sep_mode = _FLAT if mode == _FLAT or _fits(two, after, room) else _BREAK
        stack.append((ind, mode, rest))
        stack.append((ind, sep_mode, parts[1]))
    stack.append((ind, _FLAT if mode == _FLAT else mode, parts[0]))


def render(doc, width: int = WIDTH) -> str:
    propagate(doc)
    r = _Renderer()
    stack = [(0, _BREAK, doc)]
    while stack:
        ind, mode, d = stack.pop()
        if isinstance(d, str):
            r.text(d)
        elif isinstance(d, Tok):
            if r.line_first < 0:
                r.line_first = d.index
            r.text(d.text)
        elif isinstance(d, list):
            stack.extend((ind, mode, p) for p in reversed(d))
        elif isinstance(d, Line):
            if mode == _FLAT:
                if not d.soft:
                    r.text(" ")
            else:
                r.newline(ind)
        elif d is HARD:
            r.newline(ind)
        elif isinstance(d, Group):
            if mode == _FLAT and not d.broken:
                stack.append((ind, _FLAT, d.parts))
            elif d.broken:
                stack.append((ind, _BREAK, d.parts))
            else:
                flat = (ind, _FLAT, d.parts)
                stack.append(flat if _fits(flat, stack, width - r.col) else
                             (ind, _BREAK, d.parts))
        elif isinstance(d, Fill):
            _fill(d.parts, ind, mode, stack, width - r.col)
        elif isinstance(d, Nest):
            stack.append((ind + d.levels * INDENT, mode, d.parts))
        elif isinstance(d, Indent):
            stack.append((d.level * INDENT, mode, d.parts))
        elif isinstance(d, Rebase):
            delta = r.line_indent // INDENT - d.level
            stack.append((ind, mode, _shift(d.parts, delta) if delta else d.parts))
        elif isinstance(d, Hang):
            stack.append((ind, mode, d.parts))
        elif isinstance(d, Suffix):
            r.suffixes.append(d)
        elif isinstance(d, Aligned):
            r.text(" " * max(0, r.suffix_col - r.col) + d.text)
        elif d is BREAK:
            pass
        else:
            raise TypeError(f"not a document part: {d!r}")
    return r.finish()
