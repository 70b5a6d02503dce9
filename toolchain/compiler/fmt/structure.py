"""What the printer needs to know about a token list, recorded by parsing it once.

`RecordingParser` is the frontend's parser with a few rule methods wrapped: each wrapper
notes token indexes (where a statement starts and ends, which `{` opens a block, which
tokens form a type, which operators are unary, which `(` opens a cast or a call) and then
runs the real rule. The parser itself is unchanged, so the formatter reads the program
exactly as the compiler does; a construct the wrappers do not see still parses, and the
output check (verify.py) catches any layout that would read differently.
"""
from __future__ import annotations

from ..diagnostics import DiagnosticBag
from ..frontend import ast as A
from ..frontend.expr_parser import UNARY_OPS
from ..frontend.parser import Parser
from ..frontend.tokens import EOF, Token

OPENERS = {"(": ")", "[": "]", "{": "}"}


class RecordingParser(Parser):
    def __init__(self, tokens: list[Token], path: str, bag: DiagnosticBag):
        super().__init__(tokens, path, bag)
        self.stmt_end: dict[int, int] = {}     # statement/item start index -> end (exclusive)
        self.blocks: set[int] = set()          # `{` of statement blocks
        self.type_tokens: set[int] = set()     # tokens inside a type
        self.type_starts: set[int] = set()
        self.unary: set[int] = set()           # prefix operators
        self.casts: set[int] = set()           # `(` opening a cast
        self.calls: set[int] = set()           # `(` of a call or a signature
        self.words: set[int] = set()           # contextual keywords (`in`, `from`)

    def parse_item(self) -> A.Stmt:
        start = self.i
        node = super().parse_item()
        self.stmt_end[start] = self.i
        return node

    def parse_statement(self) -> A.Stmt:
        start = self.i
        node = super().parse_statement()
        self.stmt_end[start] = self.i
        return node

    def parse_block(self) -> A.Block:
        self.blocks.add(self.i)
        return super().parse_block()

    def parse_type(self) -> A.TypeExpr:
        start = self.i
        ty = super().parse_type()
        self.type_starts.add(start)
        self.type_tokens.update(range(start, self.i))
        return ty

    def parse_unary(self) -> A.Expr:
        if self.toks[self.i].kind in UNARY_OPS:
            self.unary.add(self.i)
        return super().parse_unary()

    def parse_cast(self) -> A.Expr:
        if self.toks[self.i].kind == "(" and self.looks_like_cast():
            self.casts.add(self.i)
        return super().parse_cast()

    def parse_call_args(self):
        self.calls.add(self.i - 1)
        return super().parse_call_args()

    def parse_signature(self):
        self.calls.add(self.i)
        return super().parse_signature()

    def expect_word(self, word: str) -> Token:
        self.words.add(self.i)
        return super().expect_word(word)


def match_brackets(tokens: list[Token]) -> dict[int, int]:
    """Opener index -> closer index (and back) for a token list that parsed."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, t in enumerate(tokens):
        if t.kind in OPENERS:
            stack.append(i)
        elif t.kind in (")", "]", "}") and stack:
            j = stack.pop()
            pairs[j], pairs[i] = i, j
        elif t.kind == EOF:
            break
    return pairs
