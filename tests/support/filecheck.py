"""A small FileCheck for golden tests of emitted text (PTX, SPIR-V disassembly, IR dumps).

Directives, one per line of the check script (other lines are ignored):
  CHECK: p        p occurs at or after the end of the previous match
  CHECK-NEXT: p   p occurs on the line right after the previous match's line
  CHECK-SAME: p   p occurs on the previous match's line, after that match
  CHECK-NOT: p    p does not occur between the previous match and the next positive match
                  (or the end of the input)
  CHECK-LABEL: p  like CHECK (a simplification of LLVM's block partitioning: it is matched
                  in order, and pending CHECK-NOTs stop at it)
Patterns are literal text except `{{regex}}` parts and variables, as in LLVM FileCheck:
`[[NAME:regex]]` matches regex and binds NAME to the text it matched; `[[NAME]]` matches
exactly the text NAME was last bound to (by an earlier directive, or earlier in the same
pattern). A CHECK-NOT may use variables but not bind them. Runs of spaces/tabs in the
literal text match any run of horizontal whitespace.
On failure `FileCheckError` (an AssertionError) names the directive and shows the input
near the position it searched from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"(?:^|\s|//|;|#)(CHECK(?:-NEXT|-SAME|-NOT|-LABEL)?):(.*)$")
_PART = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_][A-Za-z0-9_]*)(?::(.*?))?\]\]")


class FileCheckError(AssertionError):
    pass


@dataclass
class Check:
    kind: str
    pattern: str
    regex: re.Pattern | None       # None: the pattern uses variables (compiled when matched)
    lineno: int
    binds: tuple[str, ...] = ()

    def compiled(self, variables: dict[str, str]) -> re.Pattern:
        if self.regex is not None:
            return self.regex
        return compile_pattern(self.pattern, variables)[0]


def compile_pattern(pattern: str, variables: dict[str, str] | None = None
                    ) -> tuple[re.Pattern, tuple[str, ...]]:
    """(regex, names it binds). A use of a variable bound outside the pattern needs
    `variables`; one bound earlier in the pattern becomes a back-reference."""
    out, pos, binds = [], 0, []
    for m in _PART.finditer(pattern):
        out.append(_literal(pattern[pos:m.start()]))
        pos = m.end()
        if m.group(1) is not None:
            out.append(f"(?:{m.group(1)})")
            continue
        name, regex = m.group(2), m.group(3)
        if regex is not None:
            if name in binds:
                raise FileCheckError(f"[[{name}:...]] bound twice in {pattern!r}")
            binds.append(name)
            out.append(f"(?P<{name}>{regex})")
        elif name in binds:
            out.append(f"(?P={name})")
        elif variables is not None and name in variables:
            out.append(re.escape(variables[name]))
        else:
            raise FileCheckError(f"[[{name}]] used before it is bound in {pattern!r}")
    out.append(_literal(pattern[pos:]))
    return re.compile("".join(out)), tuple(binds)


def _uses_outer(pattern: str) -> bool:
    """Whether the pattern reads a variable it does not bind itself (before its use)."""
    bound = set()
    for m in _PART.finditer(pattern):
        if m.group(2) is not None:
            if m.group(3) is not None:
                bound.add(m.group(2))
            elif m.group(2) not in bound:
                return True
    return False


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
            if _uses_outer(pattern):
                binds = tuple(b.group(2) for b in _PART.finditer(pattern)
                              if b.group(2) is not None and b.group(3) is not None)
                checks.append(Check(m.group(1), pattern, None, lineno, binds))
            else:
                regex, binds = compile_pattern(pattern)
                checks.append(Check(m.group(1), pattern, regex, lineno, binds))
            if m.group(1) == "CHECK-NOT" and checks[-1].binds:
                raise FileCheckError(f"check line {lineno}: CHECK-NOT cannot bind a variable")
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
    variables: dict[str, str] = {}
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
        try:
            regex = check.compiled(variables)
        except FileCheckError as e:
            raise _fail(check, text, lo, str(e)) from None
        m = regex.search(text, lo, hi)
        if m is None:
            raise _fail(check, text, lo, "not found")
        _check_nots(pending, text, pos, m.start(), variables)
        pending = []
        variables.update({name: m.group(name) for name in check.binds})
        pos, last_start = m.end(), m.start()
    _check_nots(pending, text, pos, len(text), variables)


def _check_nots(pending: list[Check], text: str, lo: int, hi: int,
                variables: dict[str, str]) -> None:
    for check in pending:
        m = check.compiled(variables).search(text, lo, hi)
        if m is not None:
            raise _fail(check, text, m.start(), "found where it must not occur")
