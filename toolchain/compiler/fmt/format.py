"""format_source: Mettle text -> the same program in the canonical style.

Steps: lex and parse with the recording parser (a syntax error is the compiler's own
diagnostic), refuse syntax the printer does not know, read the comments between tokens,
print, and check that the output is the same program (verify.py).
"""
from __future__ import annotations

import sys

from ..diagnostics import CompileError, DiagnosticBag, Span
from ..frontend.lexer import tokenize
from .doc import WIDTH, render
from .printer import Printer
from .structure import RecordingParser, match_brackets
from .trivia import scan_gaps
from .verify import check_output, unknown_syntax

_RECURSION_LIMIT = 6000  # as the parser: MAX_DEPTH nesting levels, a few frames each


def format_source(text: str, path: str = "<input>", width: int = WIDTH) -> str:
    """The formatted text; raises CompileError (located diagnostics) and writes nothing.

    A few layout choices read the input's line breaks (a one-line block stays on one line if
    it fits; a declaration written over several lines gets blank lines around it), so a
    block too long for its line, broken by the first pass, may change the second pass's
    choice. Formatting the output again until nothing changes makes the result idempotent
    by construction; it settles in two passes (the second only confirms) in practice.
    """
    out = _format_once(text, path, width)
    for _ in range(3):
        again = _format_once(out, path, width)
        if again == out:
            return out
        out = again
    return out


def _format_once(text: str, path: str, width: int) -> str:
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    bag = DiagnosticBag()
    tokens = tokenize(text, path, bag)
    bag.raise_if_errors()
    parser = RecordingParser(tokens, path, bag)
    try:
        module = parser.parse_module()
    except RecursionError:
        bag.error("E0002", "program is nested too deeply", Span(path, 1, 1, 1))
    bag.raise_if_errors()
    bad = unknown_syntax(module, tokens)
    if bad is not None:
        raise CompileError(bad)
    gaps = scan_gaps(text, tokens)
    printer = Printer(tokens, gaps, parser, match_brackets(tokens))
    out = render(printer.module(), width)
    if text.startswith("\ufeff"):
        out = "\ufeff" + out
    check_output(path, tokens, module, gaps, out)
    return out
