"""What the printer needs to know about a token list, recorded by parsing it once.

`RecordingParser` is the frontend's parser with a few rule methods wrapped: each wrapper
notes token indexes (where a statement starts and ends, which `{` opens a block, which
tokens form a type, which operators are unary, which `(` opens a cast or a call, which
`<` `>` enclose type parameters, which `{` opens an item body or a match) and then runs the
real rule. The parser itself is unchanged, so the formatter reads the program
exactly as the compiler does; a construct the wrappers do not see still parses, and the
output check (verify.py) catches any layout that would read differently.
"""
from __future__ import annotations

from ..diagnostics import DiagnosticBag
from ..frontend import ast as A
from ..frontend.expr_parser import UNARY_OPS
from ..frontend.parser import Parser
from ..frontend.tokens import EOF, IDENT, Token

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
        self.angles: set[int] = set()          # `<` `>` `>>` of type parameters/arguments
        self.item_braces: dict[int, str] = {}  # `{` of a struct/enum/trait/impl body -> kind
        self.match_braces: set[int] = set()    # `{` of a match

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

    def parse_type_params(self):
        start = self.i
        out = super().parse_type_params()
        self.angles.update((start, self.i - 1))
        return out

    def parse_type_args(self):
        start = self.i
        args = super().parse_type_args()
        self.angles.update((start, self.i - 1))     # `>`, or `>>` closing two lists
        return args

    def parse_tile_type(self):
        start = self.i
        ty = super().parse_tile_type()
        self.angles.update((start + 1, self.i - 1))     # `tile<` ... `>`
        return ty

    def try_call_type_args(self):
        """`a < b * c` is first tried as type arguments: forget what that attempt noted
        unless it turned out to be `f<T>(`."""
        saved = (self.type_tokens, self.type_starts, self.angles)
        self.type_tokens, self.type_starts, self.angles = set(), set(), set()
        args = super().try_call_type_args()
        tried = (self.type_tokens, self.type_starts, self.angles)
        self.type_tokens, self.type_starts, self.angles = saved
        if args is not None:
            for kept, new in zip(saved, tried):
                kept.update(new)
        return args

    def parse_struct(self, exported):
        return self._item_body(super().parse_struct(exported), "items")

    def parse_enum(self, exported):
        start = self.i
        node = self._item_body(super().parse_enum(exported), "items")
        depth = 0
        for k in range(start, self.i):            # `Number(int64)`: a variant's payload
            kind = self.toks[k].kind
            if kind == "(" and depth == 0 and self.toks[k - 1].kind == IDENT:
                self.calls.add(k)
            depth += (kind in ("(", "[")) - (kind in (")", "]"))
        return node

    def parse_trait(self, exported):
        return self._item_body(super().parse_trait(exported), "items")

    def parse_impl(self):
        return self._item_body(super().parse_impl(), "impl")

    def _item_body(self, node, kind: str):
        """Note the body `{` of the item just parsed (it ends at its `}`, if it has one)."""
        close = self.i - 1
        if self.toks[close].kind == "}":
            self.item_braces[_partner(self.toks, close, -1)] = kind
        return node

    def parse_match_rest(self, kw, as_expr):
        start = self.i                             # the subject's `(`
        out = super().parse_match_rest(kw, as_expr)
        brace = _partner(self.toks, start, 1) + 1
        self.match_braces.add(brace)
        depth = 0
        for k in range(brace + 1, self.i - 1):     # `case Just(v):`: the binding's `(`
            kk = self.toks[k].kind
            if depth == 0 and kk == "case" and self.toks[k + 2].kind == "(":
                self.calls.add(k + 2)
            depth += (kk in ("(", "[", "{")) - (kk in (")", "]", "}"))
        return out

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


def _partner(tokens: list[Token], k: int, step: int) -> int:
    """The bracket matching tokens[k], searching forward (step 1) or backward (-1)."""
    depth = 0
    while True:
        kind = tokens[k].kind
        depth += (kind in OPENERS) - (kind in (")", "]", "}"))
        if depth == 0:
            return k
        k += step


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
