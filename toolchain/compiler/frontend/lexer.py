"""Mettle lexer (LANGUAGE §1): source text -> list of Tokens ending with one EOF token.

One compiled master regex is matched at the current offset; its `lastgroup` picks the
handler. Alternatives are ordered by frequency (identifiers first) where no two can match
the same text; only the comment openers must precede the `/` operator. Nested block
comments, strings and char literals need small hand loops because a regex cannot count
nesting or validate escapes with located errors.

Invariants:
- Errors are E0001 and go into the caller's DiagnosticBag; scanning continues after the
  bad character so one run reports several. An unclosed block comment or string ends the
  scan (everything after it belongs to it).
- Columns are 1-based character offsets from the start of the line; a leading BOM is
  skipped and does not count as a column.
- A numeric literal followed directly by a letter, digit or `_` is an error: Mettle has no
  suffixes (`1u`, `2.0f`), no `_` separators and no octal/hex exponents.
"""
from __future__ import annotations

import re

from ..diagnostics import CompileError, DiagnosticBag, Span
from .tokens import EOF, FLOAT, IDENT, INT, OPERATORS, RESERVED, STRING, Token

_SCAN = re.compile(r"""[ \t\r\f\v]*(?:
     (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<nl>\n)
    |(?P<lc>//[^\n]*)
    |(?P<bc>/\*)
    |(?P<op>""" + "|".join(re.escape(op) for op in OPERATORS) + r""")
    |(?P<float>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
    |(?P<hex>0[xX][0-9a-fA-F]+)
    |(?P<bin>0[bB][01]+)
    |(?P<dec>[0-9]+)
    |(?P<str>")
    |(?P<chr>')
    |(?P<ws>[ \t\r\f\v]+$)
)""", re.VERBOSE)

_U64_MAX = (1 << 64) - 1    # an integer literal beyond it is E0005 (§1: literals never wrap)
_SUFFIX = re.compile(r"[A-Za-z0-9_]+")
_COMMENT_EDGE = re.compile(r"/\*|\*/")
_STRING_BODY = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_STRING_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_CHAR = re.compile(r"'(?:\\(.)|([^'\\\n]))'")
_STR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}
_CHAR_ESCAPES = {"n": 10, "t": 9, "r": 13, "\\": 92, "'": 39, "0": 0}


def _unescape_string(body: str) -> bytes:
    # An unknown escape keeps both characters (LANGUAGE §1: "\q" is backslash then q).
    def repl(m: re.Match) -> str:
        return _STR_ESCAPES.get(m.group(1), m.group(0))
    return _STRING_ESCAPE.sub(repl, body).encode("utf-8")


class _Scanner:
    """Mutable scan state; one instance per `tokenize` call."""

    def __init__(self, text: str, path: str, bag: DiagnosticBag):
        self.text, self.path, self.bag = text, path, bag
        self.pos = 1 if text.startswith("\ufeff") else 0
        self.line, self.line_start = 1, self.pos
        self.tokens: list[Token] = []
        self.nl = True  # the first token counts as starting a line

    def span(self, start: int, end: int) -> Span:
        return Span(self.path, self.line, start - self.line_start + 1, max(1, end - start))

    def fail(self, msg: str, start: int, end: int, code: str = "E0001") -> None:
        self.bag.error(code, msg, self.span(start, end))

    def advance_lines(self, start: int, end: int) -> None:
        """Account for newlines inside a multi-line lexeme spanning [start, end)."""
        count = self.text.count("\n", start, end)
        if count:
            self.line += count
            self.line_start = self.text.rfind("\n", start, end) + 1
            self.nl = True

    def emit(self, kind: str, start: int, end: int, value: object) -> None:
        text = self.text[start:end]
        self.tokens.append(Token(kind, text, value, self.path, self.line,
                                 start - self.line_start + 1, self.nl))
        self.nl = False

    def run(self) -> list[Token]:
        # The hot loop keeps the scan state in locals (identifiers, operators and newlines
        # are most of a file) and syncs it with `self` only around the rarer handlers,
        # which read and update it.
        text, n, path, toks = self.text, len(self.text), self.path, self.tokens
        match, reserved = _SCAN.match, RESERVED
        pos, line, line_start, nl = self.pos, self.line, self.line_start, self.nl
        while pos < n:
            m = match(text, pos)
            if m is not None:
                kind = m.lastgroup
                end = m.end()
                if kind == "id":
                    start = m.start(kind)
                    word = text[start:end]
                    toks.append(Token(IDENT if word not in reserved else word, word, word, path,
                                      line, start - line_start + 1, nl))
                    nl = False
                    pos = end
                    continue
                if kind == "op":
                    start = m.start(kind)
                    word = text[start:end]
                    toks.append(Token(word, word, word, path, line, start - line_start + 1, nl))
                    nl = False
                    pos = end
                    continue
                if kind == "nl":
                    line += 1
                    line_start = pos = end
                    nl = True
                    continue
            self.pos, self.line, self.line_start, self.nl = pos, line, line_start, nl
            if not self.slow_path(m):
                break
            pos, line, line_start, nl = self.pos, self.line, self.line_start, self.nl
        self.pos, self.line, self.line_start, self.nl = pos, line, line_start, nl
        self.tokens.append(Token(EOF, "", None, self.path, self.line,
                                 self.pos - self.line_start + 1, True))
        return self.tokens

    def slow_path(self, m: re.Match | None) -> bool:
        """Handle a non-id/op/newline match (or no match) at self.pos; False ends the scan."""
        text = self.text
        if m is None:
            self.pos = len(text) - len(text[self.pos:].lstrip(" \t\r\f\v"))
            self.fail(f"unexpected character {text[self.pos]!r}", self.pos, self.pos + 1)
            self.pos += 1
            return True
        kind = m.lastgroup
        start, end = m.start(kind), m.end()
        if kind in ("dec", "hex", "bin", "float"):
            end = self.number(kind, start, end)
        elif kind == "bc":
            end = self.block_comment(start)
            if end < 0:
                return False
        elif kind == "str":
            end = self.string(start)
            if end < 0:
                return False
        elif kind == "chr":
            end = self.char(start)
        self.pos = end
        return True

    def number(self, kind: str, start: int, end: int) -> int:
        suffix = _SUFFIX.match(self.text, end)
        if suffix is not None:
            self.fail(f"invalid numeric literal {self.text[start:suffix.end()]!r} "
                      "(Mettle has no literal suffixes or `_` separators)",
                      start, suffix.end())
            # Still emit the literal (valid prefix) so the parser stays in step.
            self.emit(INT, start, suffix.end(), 0)
            return suffix.end()
        lit = self.text[start:end]
        if kind == "float":
            self.emit(FLOAT, start, end, float(lit))
        else:
            base = {"dec": 10, "hex": 16, "bin": 2}[kind]
            digits = lit if base == 10 else lit[2:]
            value = int(digits, base)
            if value > _U64_MAX:        # wider than every integer type: never wrap it
                self.fail(f"integer literal {lit} does not fit in any integer type (the "
                          f"largest, uint64, ends at {_U64_MAX})", start, end, "E0005")
                value = 0
            self.emit(INT, start, end, value)
        return end

    def block_comment(self, start: int) -> int:
        """Skip a nested /* */ comment; return its end, or -1 when it never closes."""
        depth, i = 1, start + 2
        while depth:
            m = _COMMENT_EDGE.search(self.text, i)
            if m is None:
                self.fail("unclosed block comment", start, start + 2)
                return -1
            depth += 1 if m.group() == "/*" else -1
            i = m.end()
        self.advance_lines(start, i)
        return i

    def string(self, start: int) -> int:
        m = _STRING_BODY.match(self.text, start)
        if m is None:
            self.fail("unterminated string literal", start, start + 1)
            return -1
        end = m.end()
        value = _unescape_string(m.group(1))
        self.tokens.append(Token(STRING, m.group(), value, self.path, self.line,
                                 start - self.line_start + 1, self.nl))
        self.nl = False
        self.advance_lines(start, end)
        return end

    def char(self, start: int) -> int:
        m = _CHAR.match(self.text, start)
        if m is None:
            eol = self.text.find("\n", start)
            close = self.text.find("'", start + 1, len(self.text) if eol < 0 else eol)
            end = close + 1 if close > start else start + 1
            self.fail("invalid character literal (one byte or one escape expected)", start, end)
            return end
        esc, plain = m.group(1), m.group(2)
        if esc is not None:
            if esc not in _CHAR_ESCAPES:
                self.fail(f"unknown escape '\\{esc}' in character literal", start, m.end())
                return m.end()
            value = _CHAR_ESCAPES[esc]
        elif ord(plain) > 127:
            self.fail("character literal must be one byte", start, m.end())
            return m.end()
        else:
            value = ord(plain)
        self.emit(INT, start, m.end(), value)
        return m.end()


def tokenize(text: str, path: str = "<input>", bag: DiagnosticBag | None = None) -> list[Token]:
    """Lex `text`. With `bag`, errors are added to it; without, they raise CompileError."""
    own = bag is None
    if own:
        bag = DiagnosticBag()
    tokens = _Scanner(text, path, bag).run()
    if own and bag.error_count:
        raise CompileError(bag.items)
    return tokens
