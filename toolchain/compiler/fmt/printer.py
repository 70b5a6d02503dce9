"""Token list + parse record + comments -> a document (doc.py) in the canonical style.

The printer walks the tokens of each statement in order and never adds, drops or reorders
a token; it only chooses what goes between two tokens: nothing, a space, or a line break
with an indentation. Structure comes from the parse record: statement ranges, statement
blocks (`{` of a body, also a lambda's), struct/enum/trait/impl bodies, switch and match
bodies, and bracketed lists (a `(`, `[` or expression `{` holding a top-level comma), which
lay out flat or one item per line.
"""
from __future__ import annotations

from .doc import (BREAK, HARD, LINE, SOFT, Aligned, Fill, Group, Hang, Indent, Nest, Rebase,
                  Suffix, Tok)
from .spacing import Spacing
from .trivia import Gap


class Printer:
    def __init__(self, tokens, gaps: list[Gap], rec, pairs):
        self.toks, self.gaps, self.rec, self.pairs = tokens, gaps, rec, pairs
        self.n = len(tokens) - 1                  # index of EOF
        self.sp = Spacing(tokens, rec, pairs)
        self.line_first = self._line_firsts()

    def _line_firsts(self) -> list[int]:
        """For each token, the index of the first token of its source line."""
        out, first = [], 0
        for i, t in enumerate(self.toks):
            if i == 0 or t.line != self.toks[i - 1].line or t.nl_before:
                first = i
            out.append(first)
        return out

    # ------------------------------------------------------------ comments
    def gap(self, i: int, sep, nl, blank_ok: bool = False, tail: bool = True,
            lead: bool = True) -> list:
        """The parts between token i-1 and token i: its comments, then `sep` (the separator
        when there are none). `nl` is a line break in this context; `blank_ok` keeps one
        blank line where the source had one; `tail` ends with the separator or break before
        token i; `lead` allows a break before the first comment on a line of its own."""
        g = self.gaps[i]
        if not g.comments:
            if sep is None:
                return []
            if blank_ok and g.newlines >= 2 and self._is_break(sep):
                return [sep, sep]
            return [sep]
        out: list = []
        prev = None
        for c in g.comments:
            if prev is not None and prev.trailing and prev.is_line and not c.trailing and \
                    c.newlines_before == 1 and c.col == prev.col:
                out += [nl, Aligned(c.text)]      # a trailing comment continued below
                prev = c
                continue
            prev = c
            if c.trailing:
                if c.ends_line:
                    first = self.line_first[i - 1] if i > 0 else -1
                    out.append(Suffix(c.text, c.col, c.line_indent, first))
                else:
                    out += [" ", c.text]
                continue
            if out or lead:
                out.append(nl)
                if blank_ok and c.newlines_before >= 2:
                    out.append(nl)
            out.append(c.text)
        if g.forces_newline:
            out.insert(0, BREAK)
        if not tail:
            return out
        last = g.comments[-1]
        if last.ends_line:
            out.append(nl)
            if blank_ok and g.newlines >= 2:
                out.append(nl)
        else:
            out.append(sep if self._is_break(sep) else " ")
        return out

    @staticmethod
    def _is_break(sep) -> bool:
        return sep is HARD or sep is LINE or sep is SOFT or isinstance(sep, (Indent, Nest))

    # ------------------------------------------------------------ module and blocks
    def module(self) -> list:
        items = self.children(0, self.n)
        parts: list = []
        prev = None
        for k, (s, e) in enumerate(items):
            if k == 0:
                parts += self.gap(s, "", HARD, blank_ok=True, lead=False)
            else:
                between = self.gap(s, HARD, HARD, blank_ok=True)
                if self._paragraph(prev) or self._paragraph((s, e)):
                    between.insert(self._after_trailing_comments(between), HARD)
                parts += between
            parts.append(self.run(s, e, 0))
            prev = (s, e)
        parts += self.gap(self.n, None, HARD, blank_ok=True, tail=False,
                          lead=bool(items))
        return parts

    @staticmethod
    def _after_trailing_comments(parts: list) -> int:
        """Where a blank line goes in a gap: after the previous item's trailing comments
        (and their aligned continuation lines). The renderer keeps at most one."""
        for at, p in enumerate(parts):
            if p is HARD and not (at + 1 < len(parts) and isinstance(parts[at + 1], Aligned)):
                return at
        return 0

    def _paragraph(self, item) -> bool:
        """An item written over several lines (a function body, a struct, a long
        declaration): a blank line separates it from its neighbours."""
        s, e = item
        return self.toks[s].line != self.toks[e - 1].line

    def children(self, i: int, close: int) -> list[tuple[int, int]]:
        """The statements directly inside tokens (i, close)."""
        out = []
        while i < close:
            e = self.rec.stmt_end.get(i)
            if e is None:
                raise ValueError(f"token {i} starts no statement")
            out.append((i, e))
            i = e
        return out

    def block(self, i: int, level: int, items: list | None = None) -> list:
        """A statement block, or a body of other units [s, e) (`items`: match arms, impl
        members), one per line when broken."""
        close = self.pairs[i]
        if items is None:
            items = self.children(i + 1, close)
        if not items and not self.gaps[close].comments:
            return [Tok("{", i), Tok("}", close)]
        inner: list = []
        for k, (s, e) in enumerate(items):
            inner += self.gap(s, LINE, LINE, blank_ok=k > 0)
            inner.append(self.run(s, e, level + 1))
        inner += self.gap(close, None, LINE, blank_ok=False, tail=False)
        broken = self.toks[i].line != self.toks[close].line
        return [Group([Tok("{", i), Indent(level + 1, inner),
                       Indent(level, [LINE]), Tok("}", close)], broken)]

    def match_block(self, i: int, level: int) -> list:
        """`match (x) { case A(v): ... default: ... }`: one arm per line when broken."""
        close = self.pairs[i]
        starts, j = [], i + 1
        while j < close:
            k = self.toks[j].kind
            if k in ("case", "default"):
                starts.append(j)
            j = self.pairs[j] + 1 if k in ("(", "[", "{") else j + 1
        return self.block(i, level, list(zip(starts, starts[1:] + [close])))

    def impl_block(self, i: int, level: int) -> list:
        """`impl T for X { fn ... }`: each member (attributes, signature, body) a unit."""
        close = self.pairs[i]
        members, j = [], i + 1
        while j < close:
            k = j
            while k not in self.rec.blocks:
                k += 1
            members.append((j, self.pairs[k] + 1))
            j = self.pairs[k] + 1
        return self.block(i, level, members)

    def member_end(self, j: int) -> int:
        """The end of a struct's `method m(...) { ... }` (and its optional `;`)."""
        while j not in self.rec.blocks:
            j += 1
        e = self.pairs[j] + 1
        return e + 1 if self.toks[e].kind == ";" else e

    def switch_block(self, i: int, level: int) -> list:
        close = self.pairs[i]
        inner: list = []
        j, first = i + 1, True
        on_label_line = False
        while j < close:
            t = self.toks[j]
            if t.kind in ("case", "default"):
                colon = j + 1
                while self.toks[colon].kind != ":":
                    opens = self.toks[colon].kind in ("(", "[", "{")
                    colon = self.pairs[colon] + 1 if opens else colon + 1
                inner += self.gap(j, LINE, LINE, blank_ok=not first)
                inner.append(self.inner(j, colon + 1))
                j, on_label_line = colon + 1, True
            else:
                e = self.rec.stmt_end[j]
                g = self.gaps[j]
                if t.nl_before or g.forces_newline:
                    on_label_line = False
                if on_label_line:
                    inner += self.gap(j, " ", LINE)
                    inner.append(self.run(j, e, level + 1))
                else:
                    inner.append(Indent(level + 2, self.gap(j, LINE, LINE, blank_ok=True)))
                    inner.append(self.run(j, e, level + 2))
                j = e
            first = False
        inner += self.gap(close, None, LINE, tail=False)
        broken = self.toks[i].line != self.toks[close].line
        return [Group([Tok("{", i), Indent(level + 1, inner),
                       Indent(level, [LINE]), Tok("}", close)], broken)]

    def item_block(self, i: int, level: int) -> list:
        """A struct or enum body: fields or variants, one per line when broken."""
        close = self.pairs[i]
        if close == i + 1 and not self.gaps[close].comments:
            return [Tok("{", i), Tok("}", close)]
        inner: list = []
        j, start = i + 1, True
        while j < close:
            t = self.toks[j]
            if start:
                inner += self.gap(j, LINE, LINE, blank_ok=j > i + 1)
            elif t.nl_before:
                inner += self.gap(j, LINE, LINE)
            else:
                inner += self.gap(j, " " if self.sp.space(j - 1, j) else "", HARD)
            if t.kind == "method":
                e = self.member_end(j)
                inner.append(self.run(j, e, level + 1))
                j, start = e, True
                continue
            if t.kind in ("(", "[", "{"):
                inner.append(self.bracket(j))
                j = self.pairs[j] + 1
            else:
                inner.append(Tok(t.text, j))
                j += 1
            start = t.kind in (",", ";")
        inner += self.gap(close, None, LINE, tail=False)
        broken = self.toks[i].line != self.toks[close].line
        return [Group([Tok("{", i), Indent(level + 1, inner),
                       Indent(level, [LINE]), Tok("}", close)], broken)]

    def brace_kind(self, i: int) -> str:
        """`block`, `switch`, `match`, `items` (struct/enum/trait body), `impl` or `list`
        (an expression)."""
        if i in self.rec.match_braces:
            return "match"
        if i in self.rec.item_braces:
            return self.rec.item_braces[i]
        if i in self.rec.blocks:
            return "block"
        prev = self.toks[i - 1] if i > 0 else None
        if prev is not None and prev.kind == ")":
            opener = self.pairs.get(i - 1, 0)
            if opener > 0 and self.toks[opener - 1].kind == "switch":
                return "switch"
        return "list"

    # ------------------------------------------------------------ statements
    def run(self, s: int, e: int, level: int) -> list:
        """One statement (or item), tokens [s, e), at indentation `level`."""
        top: list = []
        parts = top
        cont = False
        j = s
        while j < e:
            t = self.toks[j]
            if j > s:
                g = self.gaps[j]
                newline = t.nl_before or g.forces_newline
                if j in self.rec.stmt_end:             # a body without braces
                    if newline:
                        nl = Indent(level + 1, [HARD])
                        parts += self.gap(j, nl, nl)
                    else:
                        parts += self.gap(j, " ", Indent(level + 1, [HARD]))
                    end = self.rec.stmt_end[j]
                    parts.append(self.run(j, end, level + 1))
                    j = end
                    continue
                if t.kind == "else" or (t.kind == "{" and j in self.rec.blocks):
                    nl = Indent(level, [HARD])
                    if self.toks[j - 1].kind == "}" or t.kind == "{" or not newline:
                        parts += self.gap(j, " ", nl)
                    else:
                        parts += self.gap(j, nl, nl)
                elif t.kind == "{" and self.brace_kind(j) in ("switch", "items", "impl",
                                                              "match"):
                    parts += self.gap(j, " ", Indent(level, [HARD]))
                elif newline:
                    if not cont:
                        cont = True
                        inner: list = []
                        parts.append(Indent(level + 1, inner))
                        parts = inner
                    parts += self.gap(j, HARD, HARD)
                else:
                    sep = " " if self.sp.space(j - 1, j) else ""
                    parts += self.gap(j, sep, HARD if cont else Indent(level + 1, [HARD]))
            if t.kind == "{":
                kind = self.brace_kind(j)
                if kind == "block":
                    parts += self.block(j, level)
                elif kind == "switch":
                    parts += self.switch_block(j, level)
                elif kind == "items":
                    parts += self.item_block(j, level)
                elif kind == "impl":
                    parts += self.impl_block(j, level)
                elif kind == "match":
                    parts += self.match_block(j, level)
                else:
                    parts.append(self.bracket(j))
                j = self.pairs[j] + 1
            elif t.kind in ("(", "["):
                parts.append(self.bracket(j))
                j = self.pairs[j] + 1
            else:
                parts.append(Tok(t.text, j))
                j += 1
        return top

    # ------------------------------------------------------------ brackets
    def bracket(self, i: int) -> list:
        close = self.pairs[i]
        brace = self.toks[i].kind == "{"
        commas = self.top_commas(i, close)
        if close == i + 1 and not self.gaps[close].comments:
            return [Tok(self.toks[i].text, i), Tok(self.toks[close].text, close)]
        line = LINE if brace else SOFT
        if commas and i in self.rec.type_tokens:  # a function-pointer type: packed
            return self.packed(i, close, commas)
        if not commas:
            inner = []
            if close > i + 1:                     # not `( /* only a comment */ )`
                inner += self.gap(i + 1, " " if brace else "", Nest(1, [HARD]))
                inner.append(self.inner(i + 1, close))
            inner += self.gap(close, " " if brace else "", Nest(1, [HARD]))
            body = [Tok(self.toks[i].text, i)] + inner + [Tok(self.toks[close].text, close)]
            if any(self.gaps[x].forces_newline for x in (i + 1, close)):
                return [Group(body)]
            return body
        items: list = []
        starts = [i + 1] + [c + 1 for c in commas]
        ends = commas + [close]
        for k, (a, b) in enumerate(zip(starts, ends)):
            if a == b and b == close:              # a trailing comma
                break
            items += self.gap(a, line if k == 0 else LINE, LINE if k else line)
            items.append(self.inner(a, b))
            if b != close:
                items += self.gap(b, "", Nest(1, [HARD]))
                items.append(Tok(",", b))
        items += self.gap(close, None, line, tail=False)
        return [Group([Tok(self.toks[i].text, i), Nest(1, items), line,
                       Tok(self.toks[close].text, close)])]

    def packed(self, i: int, close: int, commas: list[int]) -> list:
        """A list filled line by line (function-pointer parameter types): as many items per
        line as fit, continuation lines one level in."""
        fill: list = []
        starts = [i + 1] + [c + 1 for c in commas]
        ends = commas + [close]
        for k, (a, b) in enumerate(zip(starts, ends)):
            item = self.gap(a, "", Nest(1, [HARD])) if k == 0 else []
            item.append(self.inner(a, b))
            if b != close:
                item += self.gap(b, "", Nest(1, [HARD]))
                item.append(Tok(",", b))
            if k:
                fill.append(self.gap(a, LINE, HARD))
            fill.append(item)
        body = [Nest(1, [Fill(fill)])] + self.gap(close, None, Nest(1, [HARD]))
        return [Tok(self.toks[i].text, i)] + body + [Tok(self.toks[close].text, close)]

    def top_commas(self, i: int, close: int) -> list[int]:
        out, j = [], i + 1
        while j < close:
            k = self.toks[j].kind
            if k in ("(", "[", "{"):
                j = self.pairs[j] + 1
                continue
            if k == ",":
                out.append(j)
            j += 1
        return out

    def inner(self, a: int, b: int) -> list:
        """Tokens [a, b) inside brackets: one line, except where the source wrapped an
        expression at a binary operator (kept, one level deeper)."""
        top: list = []
        parts = top
        cont = False
        j = a
        while j < b:
            t = self.toks[j]
            if j > a:
                g = self.gaps[j]
                wrap = t.nl_before and (self.sp.is_binary(j - 1) or self.sp.is_binary(j))
                if wrap or g.forces_newline:
                    if not cont:
                        cont = True
                        nested: list = []
                        parts.append(Nest(1, nested))
                        parts = nested
                    parts += self.gap(j, HARD, HARD)
                else:
                    sep = " " if self.sp.space(j - 1, j) else ""
                    parts += self.gap(j, sep, HARD)
            if t.kind == "{" and self.brace_kind(j) in ("block", "match"):
                # a lambda body or a match inside brackets: indented from its line
                body = self.block(j, 0) if j in self.rec.blocks else self.match_block(j, 0)
                parts.append(Hang([Rebase(0, body)]))
                j = self.pairs[j] + 1
            elif t.kind in ("(", "[", "{"):
                parts.append(self.bracket(j))
                j = self.pairs[j] + 1
            else:
                parts.append(Tok(t.text, j))
                j += 1
        return top

