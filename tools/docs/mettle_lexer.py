"""A Pygments lexer for Mettle, used by the docs site (tools/docs/mkdocs_hooks.py registers
it under the name `mettle`) and by anyone who wants Mettle highlighted.

The reserved words and type names come from the compiler's own token tables, so the lexer
and the language cannot drift apart.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)

from toolchain.compiler.frontend.tokens import (BUILTIN_TYPE_NAMES, KEYWORDS, OPERATORS,
                                                TYPE_KEYWORDS)

__all__ = ["MettleLexer"]

# GPU built-ins: the index vectors and the families the frontend recognises by prefix.
INDEX_NAMES = ("thread", "block", "block_dim", "grid_dim")
BUILTIN_PREFIXES = r"(?:tensor|subgroup|atomic|async_copy|gpu)_\w+"


class MettleLexer(RegexLexer):
    name = "Mettle"
    aliases = ["mettle"]
    filenames = ["*.mettle"]
    mimetypes = ["text/x-mettle"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
            (r'"', String, "string"),
            (r"'(\\.|[^\\'])'", String.Char),
            (r"@\w+", Name.Decorator),
            (r"0[xX][0-9a-fA-F_]+|0[bB][01_]+", Number.Hex),
            (r"\d[\d_]*\.\d[\d_]*([eE][+-]?\d+)?|\d[\d_]*[eE][+-]?\d+", Number.Float),
            (r"\d[\d_]*", Number.Integer),
            (r"(fn|kernel)(\s+)([A-Za-z_]\w*)", bygroups(Keyword, Whitespace, Name.Function)),
            (r"(struct|enum)(\s+)([A-Za-z_]\w*)", bygroups(Keyword, Whitespace, Name.Class)),
            (words(sorted(TYPE_KEYWORDS | BUILTIN_TYPE_NAMES), suffix=r"\b"), Keyword.Type),
            (words(("true", "false"), suffix=r"\b"), Keyword.Constant),
            (words(sorted(KEYWORDS), suffix=r"\b"), Keyword),
            (words(INDEX_NAMES, suffix=r"\b"), Name.Builtin),
            (BUILTIN_PREFIXES + r"\b", Name.Builtin),
            (r"[A-Za-z_]\w*", Name),
            (words(sorted((o for o in OPERATORS if o not in "(){}[];,:."), key=len,
                          reverse=True)), Operator),
            (r"[(){}\[\];,:.]", Punctuation),
            (r".", Text),
        ],
        "comment": [
            (r"[^*/]+", Comment.Multiline),
            (r"/\*", Comment.Multiline, "#push"),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"[*/]", Comment.Multiline),
        ],
        "string": [
            (r'\\.', String.Escape),
            (r'[^"\\]+', String),
            (r'"', String, "#pop"),
        ],
    }
