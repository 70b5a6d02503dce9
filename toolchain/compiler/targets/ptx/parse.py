"""PTX text -> instruction objects, for PTX that genuinely arrives as text: `.ptx` files
read by tools (tools/gpu/ptx_lexical.py) and compiled text read back by the test simulator
(tests/tensor/ptx_sim.py). The compiler itself never parses PTX (lowerings build objects
with ops.py; tests/ptx/test_no_text_instructions.py fails if a compiler module imports
this reader). It is printer.py's inverse: `parse_statement(printer.format_instr(i))` gives
back `i`, for every statement the backend writes (up to spelling: `[r+0]` reads back as
`[r]`).
"""
from __future__ import annotations

import re

from .instr import (COMMENT, DIRECTIVE, LABEL, OP, SCOPE, Addr, PtxFunction, PtxInstr,
                    PtxModule, Vec, dest_count)

_GUARD = re.compile(r"@(!?)(%?[\w$.]+)\s+")
_LABEL = re.compile(r"([\w$]+):\s*(?://\s?(.*))?$")
_ADDR = re.compile(r"\[([^\[\]+]+?)(?:\+(-?\d+))?\]")


_BRACKETS = re.compile(r"[{}\[\]()]")


def split_operands(text: str) -> list[str]:
    """Split at top-level commas (not inside {...}, [...] or (...))."""
    if not _BRACKETS.search(text):             # (most operand lists: no per-character walk)
        return [x.strip() for x in text.split(",")] if text.strip() else []
    out, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:k].strip())
            start = k + 1
    last = text[start:].strip()
    if last or out:
        out.append(last)
    return out


def _operand(text: str):
    """`[base+off]` -> Addr, `{a, b}` -> Vec, anything else stays text. Spellings are
    normalized (`[r+0]` prints as `[r]`, `{a,b}` as `{a, b}`); the meaning is the same."""
    if text[:1] == "[":
        m = _ADDR.fullmatch(text)
        if m:
            return Addr(m.group(1).strip(), int(m.group(2)) if m.group(2) else 0)
        return text
    if text[:1] == "{" and text[-1:] == "}":
        return Vec(x.strip() for x in text[1:-1].split(","))
    return text


def parse_statement(line: str) -> PtxInstr:
    """One statement: `[@[!]p ]name ops` (a trailing `;` is optional), a label, a `{`/`}`
    scope bracket or a `.directive`."""
    s = line.strip()
    if s in ("{", "}"):
        return PtxInstr(SCOPE, s)
    m = _LABEL.fullmatch(s)
    if m:
        return PtxInstr(LABEL, m.group(1), comment=m.group(2))
    if s.startswith("//"):
        return PtxInstr(COMMENT, s[2:].strip())
    if s.endswith(";"):
        s = s[:-1].rstrip()
    if s.startswith("."):
        return PtxInstr(DIRECTIVE, s)
    guard, negated = None, False
    g = _GUARD.match(s)
    if g:
        guard, negated = g.group(2), g.group(1) == "!"
        s = s[g.end():]
    name, _, rest = s.partition(" ")
    ops = [_operand(o) for o in split_operands(rest)] if rest.strip() else []
    nd = dest_count(name) if ops else 0
    return PtxInstr(OP, name, tuple(ops[:nd]), tuple(ops[nd:]), guard, negated)


# ---- whole modules read from disk ---------------------------------------------------------
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_HEADER = re.compile(r"\.(entry|func)\b")
_NAME = re.compile(r"\s*([A-Za-z_$%][\w$]*)\s*\(")
_LEADING_LABEL = re.compile(r"^([\w$]+):\s*")


def strip_comments(text: str) -> str:
    return _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub(" ", text))


def _matching_brace(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _function_name(text: str, pos: int, kind: str):
    """Name after `.entry`/`.func`; a `.func` may first declare `(return params)`."""
    if kind == "func":
        rest = text[pos:]
        lead = len(rest) - len(rest.lstrip())
        if rest.lstrip().startswith("("):
            close = text.find(")", pos + lead)
            if close < 0:
                return None
            pos = close + 1
    m = _NAME.match(text, pos)
    return (m.group(1), m.end()) if m else None


def _statements(body: str) -> list[str]:
    """Split a body at `;`. A brace that opens a statement is a scope and becomes its own
    statement; a brace inside a statement is a vector operand (`{%f1, %f2}`) and is kept."""
    out, cur, operand_depth = [], [], 0
    for ch in body:
        if ch == "{" and not "".join(cur).strip():
            out.append("{")
            continue
        if ch == "}" and operand_depth == 0:
            out += ["".join(cur), "}"]
            cur = []
            continue
        operand_depth += (ch == "{") - (ch == "}")
        if ch == ";" and operand_depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _body(text: str) -> list[PtxInstr]:
    body = []
    for raw in _statements(text):
        stmt = " ".join(raw.split())
        while (lab := _LEADING_LABEL.match(stmt)) is not None:
            body.append(PtxInstr(LABEL, lab.group(1)))
            stmt = stmt[lab.end():]
        if stmt:
            body.append(parse_statement(stmt))
    return body


def parse_module(text: str) -> PtxModule:
    """Every function definition of a PTX file, in source order (prototypes skipped);
    raises ValueError on unbalanced braces. Register declarations (`.reg`) stay in the body
    as DIRECTIVE statements; header fields are read from `.version`/`.target`."""
    src = strip_comments(text)
    version = re.search(r"^\s*\.version\s+(\S+)", src, re.M)
    target = re.search(r"^\s*\.target\s+([^\s,]+)", src, re.M)
    functions: list[PtxFunction] = []
    pos = 0
    while (m := _HEADER.search(src, pos)) is not None:
        found = _function_name(src, m.end(), m.group(1))
        if found is None:
            pos = m.end()
            continue
        name, after = found
        brace, semi = src.find("{", after), src.find(";", after)
        if brace < 0 or (0 <= semi < brace):
            pos = after                           # a prototype: no body
            continue
        end = _matching_brace(src, brace)
        if end < 0:
            raise ValueError(f"unbalanced braces in the body of {name}")
        head = src[m.start():brace].strip()
        params = re.findall(r"\.param\s+(?:\.\w+\s+)*?\.\w+\s+([\w$]+)",
                            src[after:brace])       # not a .func's return parameter
        functions.append(PtxFunction(name, m.group(1), head, params, [], [],
                                     _body(src[brace + 1:end])))
        pos = end + 1
    return PtxModule(version.group(1) if version else "", target.group(1) if target else "",
                     [], [], functions)
