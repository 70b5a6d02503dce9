"""Whether two adjacent tokens on one line are separated by a space (docs/reference/fmt.md).

The default is one space; the rules below remove it. They read the parser's record
(structure.RecordingParser) for the cases the tokens alone leave open: `*` in a type or as
a prefix operator, a `(` that opens a call or a cast, `->` as a return type or a member.
"""
from __future__ import annotations

from ..frontend.expr_parser import BINARY_PREC
from ..frontend.tokens import IDENT, STRING, TYPE_KEYWORDS

_NO_SPACE_BEFORE = frozenset((")", "]", ",", ";", ":", ".", ".."))
_NO_SPACE_AFTER = frozenset(("(", "[", ".", "..", "@"))
_CALL_KEYWORDS = frozenset(("kernel", "fn", "barrier"))
_CONTROL = frozenset(("if", "while", "for", "switch", "return", "dispatch"))


class Spacing:
    def __init__(self, tokens, rec, pairs):
        self.toks, self.rec, self.pairs = tokens, rec, pairs

    def is_member_arrow(self, i: int) -> bool:
        return self.toks[i].kind == "->" and i + 1 not in self.rec.type_starts

    def is_cast_close(self, i: int) -> bool:
        t = self.toks[i]
        return t.kind == ")" and self.pairs.get(i) in self.rec.casts

    def is_binary(self, i: int) -> bool:
        """A binary operator (for wrapped expressions: a break may follow or precede it)."""
        k = self.toks[i].kind
        return k in BINARY_PREC and i not in self.rec.unary and \
            i not in self.rec.type_tokens and i not in self.rec.angles

    def space(self, i: int, j: int) -> bool:
        """Token j follows token i (j == i + 1) on the same line."""
        a, b = self.toks[i], self.toks[j]
        ak, bk = a.kind, b.kind
        if j in self.rec.stmt_end:
            return True                        # a body after `if (c)` or a label
        if ak in _NO_SPACE_AFTER or bk in _NO_SPACE_BEFORE:
            return False
        if ak == ">" and bk in (">", ">>"):
            return True                        # `> >` written apart would lex as `>>`
        if j in self.rec.angles or (ak == "<" and i in self.rec.angles):
            return False                       # `Pair<int32, T>`, `fn f<T>(`
        if ak == "=" and i > 0 and self.toks[i - 1].kind == "..":
            return False                       # `0..=n`
        if self.is_member_arrow(i) or self.is_member_arrow(j):
            return False
        if i in self.rec.unary or self.is_cast_close(i):
            return False
        if ak == "@" or (i > 0 and self.toks[i - 1].kind == "@" and bk in ("!", "(")):
            return False                       # `@unroll(4)`, `@inline!`
        if bk == "(":
            if j in self.rec.calls or ak in _CALL_KEYWORDS:
                return False
            if ak == IDENT and (a.text == "sizeof" or i in self.rec.type_tokens):
                return False
            if ak in (")", "]") and j not in self.rec.casts:
                return False                   # `(f)(x)`, `table[i](x)`
            return True
        if bk == "[":
            return not (ak in (IDENT, STRING, ")", "]") or ak in TYPE_KEYWORDS
                        or j in self.rec.type_tokens) or i in self.rec.words
        if bk == "*" and j in self.rec.type_tokens and i in self.rec.type_tokens:
            return False                       # `float32*`, `int32**`
        if bk == "!" and ak == IDENT and i > 0 and self.toks[i - 1].kind == "@":
            return False
        return True
