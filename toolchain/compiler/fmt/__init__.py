"""`mettle fmt`: prints Mettle source in one canonical style (docs/reference/fmt.md).

Layer: uses the frontend's lexer and parser (read-only) and the diagnostics; nothing else.
The formatter only moves whitespace and comments: every output is re-lexed and re-parsed,
and refused unless its tokens, its syntax tree and its comments equal the input's.
"""
from .format import format_source

__all__ = ["format_source"]
