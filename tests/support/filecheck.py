"""A small FileCheck for golden tests of emitted text (PTX, SPIR-V disassembly, IR dumps).

Directives, one per line of the check script (other lines are ignored):
  CHECK: p        p occurs at or after the end of the previous match
  CHECK-NEXT: p   p occurs on the line right after the previous match's line
  CHECK-SAME: p   p occurs on the previous match's line, after that match
  CHECK-NOT: p    p does not occur between the previous match and the next positive match
                  (or the end of the input)
  CHECK-LABEL: p  like CHECK (a simplification of LLVM's block partitioning: it is matched
                  in order, and pending CHECK-NOTs stop at it)
Patterns are literal text except `{{regex}}` parts; runs of spaces/tabs in the literal text
match any run of horizontal whitespace, as in LLVM FileCheck.
On failure `FileCheckError` (an AssertionError) names the directive and shows the input
near the position it searched from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"(?:^|\s|//|;|#)(CHECK(?:-NEXT|-SAME|-NOT|-LABEL)?):(.*)$")


class FileCheckError(AssertionError):
    pass


@dataclass
class Check:
    kind: str
    pattern: str
    regex: re.Pattern
    lineno: int


def compile_pattern(pattern: str) -> re.Pattern:
    out, pos = [], 0
    for m in re.finditer(r"\{\{(.*?)\}\}", pattern):
        out.append(_literal(pattern[pos:m.start()]))
        out.append(f"(?:{m.group(1)})")
        pos = m.end()
    out.append(_literal(pattern[pos:]))
    return re.compile("".join(out))


def _literal(text: str) -> str:
    return r"[ \t]+".join(re.escape(part) for part in re.split(r"[ \t]+", text))


def parse_checks(script: str) -> list[Check]:
    checks = []
    for lineno, line in enumerate(script.splitlines(), 1):
        m = _DIRECTIVE.search(line)
        if m:
            pattern = m.group(2).strip()
            if not pattern and m.group(1) != "CHECK-NOT":
                raise FileCheckError(f"check line {lineno}: empty {m.group(1)} pattern")
            checks.append(Check(m.group(1), pattern, compile_pattern(pattern), lineno))
    if not checks:
        raise FileCheckError("no CHECK directives in the check script")
    return checks


def _line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def _fail(check: Check, text: str, pos: int, why: str) -> FileCheckError:
    start, _ = _line_bounds(text, pos)
    context = "\n".join(text[start:].splitlines()[:8])
    return FileCheckError(f"{check.kind}: {check.pattern!r} (check line {check.lineno}) "
                          f"{why}\n--- input from the search position ---\n{context}")


def filecheck(text: str, script: str) -> None:
    """Match `text` against the directives of `script`; raise FileCheckError on a mismatch."""
    pos, last_start = 0, 0
    pending: list[Check] = []
    for check in parse_checks(script):
        if check.kind == "CHECK-NOT":
            pending.append(check)
            continue
        if check.kind == "CHECK-NEXT":
            nl = text.find("\n", pos)
            if nl < 0:
                raise _fail(check, text, pos, "has no next line")
            lo, hi = nl + 1, _line_bounds(text, nl + 1)[1]
        elif check.kind == "CHECK-SAME":
            lo, hi = pos, _line_bounds(text, last_start)[1]
        else:
            lo, hi = pos, len(text)
        m = check.regex.search(text, lo, hi)
        if m is None:
            raise _fail(check, text, lo, "not found")
        _check_nots(pending, text, pos, m.start())
        pending = []
        pos, last_start = m.end(), m.start()
    _check_nots(pending, text, pos, len(text))


def _check_nots(pending: list[Check], text: str, lo: int, hi: int) -> None:
    for check in pending:
        m = check.regex.search(text, lo, hi)
        if m is not None:
            raise _fail(check, text, m.start(), "found where it must not occur")
