"""Token kinds and the Token record produced by the lexer.

Invariants:
- A keyword or operator token has `kind` equal to its own spelling (`"fn"`, `"+="`), so the
  parser can compare `tok.kind == "while"` without a second table.
- Every other token has one of the class kinds INT, FLOAT, STRING, IDENT, EOF.
- `nl_before` is True when at least one newline separates this token from the previous one
  (comments included); the parser uses it to end statements at line breaks (LANGUAGE §1).
- Char literals are INT tokens (`'A'` has value 65); string values are UTF-8 `bytes`.
"""
from __future__ import annotations

from ..diagnostics import Span

INT = "INT"
FLOAT = "FLOAT"
STRING = "STRING"
IDENT = "IDENT"
EOF = "EOF"

# LANGUAGE §1 reserved words, including the later-tier ones (the parser rejects those
# with a "not supported yet" diagnostic rather than treating them as names).
KEYWORDS = frozenset("""
    import import_str extern export var const fn kernel struct enum trait impl where method
    return if else while for switch case default match break continue defer errdefer asm
    this new dispatch barrier workgroup private
    """.split())

TYPE_KEYWORDS = frozenset(
    "int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 string".split())

RESERVED = KEYWORDS | TYPE_KEYWORDS

# Not reserved, but with a built-in meaning when used as a type name.
BUILTIN_TYPE_NAMES = frozenset(("bool", "cstring", "void"))

# x86 mnemonics/registers: the reference lexes them as their own tokens but accepts them
# wherever an identifier is expected, so here they simply stay IDENT tokens. The set is
# exported for a later inline-asm parser.
ASM_WORDS = frozenset("""
    add sub mov cmp jmp je jne call ret push pop lea xor and or not neg imul idiv syscall int
    rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15
    """.split())

# Longest spelling first so the scanner's alternation is greedy (LANGUAGE §1 list).
OPERATORS = (
    "<<=", ">>=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "==", "!=", "<=", ">=", "&&", "||",
    "<<", ">>", "->", "..",
    "=", "<", ">", "!", "+", "-", "*", "/", "%", "&", "|", "^", "~", ".",
    "(", ")", "{", "}", "[", "]", ":", ";", ",", "@",
)

ASSIGN_OPS = frozenset(("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="))


class Token:
    """One lexeme. `value` is int for INT, float for FLOAT, bytes for STRING, else the text.

    Position is stored as plain ints (building a frozen Span per token would dominate lexing
    time); `span` builds the Span on demand.
    """

    __slots__ = ("kind", "text", "value", "path", "line", "col", "nl_before")

    def __init__(self, kind: str, text: str, value: object, path: str, line: int, col: int,
                 nl_before: bool):
        self.kind = kind
        self.text = text
        self.value = value
        self.path = path
        self.line = line
        self.col = col
        self.nl_before = nl_before

    @property
    def length(self) -> int:
        return max(1, len(self.text)) if "\n" not in self.text else self.text.index("\n") or 1

    @property
    def span(self) -> Span:
        return Span(self.path, self.line, self.col, self.length)

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r}, {self.span})"
