"""Lexical view of PTX text: function bodies and instruction-class counts.

This is deliberately a lexer, not a parser: it strips comments, finds `.entry`/`.func`
definitions by brace matching, splits bodies into `;`-terminated statements and classifies
each instruction by its opcode spelling. Counts are static (a loop body counts once) and say
nothing about dynamic traffic. Declarations without a body (prototypes) are skipped.
Classes are stable names; an opcode matching no rule counts as `alu`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_HEADER = re.compile(r"\.(entry|func)\b")
_NAME = re.compile(r"\s*([A-Za-z_$%][\w$]*)\s*\(")
_GUARD = re.compile(r"^@!?%?\w+\s+")
_LABEL = re.compile(r"^[\w$]+:\s*")

# Loads and stores are classified by their state-space qualifier (ld.global.nc.v4.f32,
# st.volatile.shared.u32, ld.shared::cta.b32); no state space means a generic address.
_SPACES = ("global", "shared", "local", "param", "const")
_MEMORY_OPS = {"ld": "load", "ldu": "load", "st": "store"}

# (opcode base, class) rows for everything else. A row matches the opcode itself or any
# dotted refinement of it ("bar" covers "bar.sync"); first match wins.
_CLASS_ROWS: tuple[tuple[str, str], ...] = (
    ("atom", "atomic"), ("red", "atomic"),
    ("cp.async.bulk", "bulk_copy"), ("cp.reduce.async.bulk", "bulk_copy"),
    ("cp.async", "async_copy"),
    ("wgmma", "tensor"), ("wmma", "tensor"), ("mma", "tensor"), ("ldmatrix", "tensor"),
    ("stmatrix", "tensor"), ("tcgen05", "tensor"),
    ("bar", "barrier"), ("barrier", "barrier"), ("mbarrier", "mbarrier"),
    ("membar", "fence"), ("fence", "fence"),
    ("shfl", "warp"), ("vote", "warp"), ("match", "warp"), ("redux", "warp"),
    ("activemask", "warp"), ("elect", "warp"),
    ("bra", "control"), ("brx", "control"), ("call", "control"), ("ret", "control"),
    ("exit", "control"), ("trap", "control"),
    ("setp", "compare"), ("selp", "compare"), ("set", "compare"),
    ("cvt", "convert"), ("cvta", "convert"), ("mov", "move"),
    ("tex", "texture"), ("tld4", "texture"), ("suld", "surface"), ("sust", "surface"),
    ("prefetch", "prefetch"), ("prefetchu", "prefetch"), ("applypriority", "prefetch"),
)

# Classes that touch global memory, summed into the selector's static traffic metric.
# Generic loads/stores may hit global memory, so they count too (an upper bound).
GLOBAL_MEMORY_CLASSES = ("global_load", "global_store", "atomic", "async_copy", "bulk_copy",
                         "generic_load", "generic_store")


@dataclass
class PtxFunction:
    name: str
    kind: str                       # "entry" | "func"
    statements: list[str] = field(default_factory=list)
    directives: list[str] = field(default_factory=list)


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


def _function_name(text: str, pos: int, kind: str) -> tuple[str, int] | None:
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


def split_functions(text: str) -> list[PtxFunction]:
    """Every function definition in source order; raises ValueError on unbalanced braces."""
    src = strip_comments(text)
    out: list[PtxFunction] = []
    pos = 0
    while (m := _HEADER.search(src, pos)) is not None:
        found = _function_name(src, m.end(), m.group(1))
        if found is None:
            pos = m.end()
            continue
        name, after = found
        brace, semi = src.find("{", after), src.find(";", after)
        if brace < 0 or (0 <= semi < brace):
            pos = after  # a prototype: no body to count
            continue
        end = _matching_brace(src, brace)
        if end < 0:
            raise ValueError(f"unbalanced braces in the body of {name}")
        out.append(_body(name, m.group(1), src[brace + 1:end]))
        pos = end + 1
    return out


def _statements(body: str) -> list[str]:
    """Split a body at `;`. A brace that opens a statement is a scope and is dropped; a
    brace inside a statement is a vector operand (`{%f1, %f2}`) and is kept."""
    out, cur, operand_depth = [], [], 0
    for ch in body:
        if ch == "{" and not "".join(cur).strip():
            continue
        if ch == "}" and operand_depth == 0:
            out.append("".join(cur))
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


def _body(name: str, kind: str, body: str) -> PtxFunction:
    fn = PtxFunction(name, kind)
    for raw in _statements(body):
        stmt = " ".join(raw.split())
        while (lab := _LABEL.match(stmt)) is not None:
            stmt = stmt[lab.end():]
        if not stmt:
            continue
        (fn.directives if stmt.startswith(".") else fn.statements).append(stmt)
    return fn


def opcode(statement: str) -> str:
    return _GUARD.sub("", statement).split(" ", 1)[0]


def classify(op: str) -> str:
    parts = op.split(".")
    if parts[0] in _MEMORY_OPS:
        kind = _MEMORY_OPS[parts[0]]
        for part in parts[1:]:
            space = part.split("::", 1)[0]
            if space in _SPACES:
                return f"{space}_{kind}"
        return f"generic_{kind}"
    for base, cls in _CLASS_ROWS:
        if op == base or op.startswith(base + "."):
            return cls
    return "alu"


def class_counts(fn: PtxFunction) -> dict[str, int]:
    counts: dict[str, int] = {}
    for stmt in fn.statements:
        cls = classify(opcode(stmt))
        counts[cls] = counts.get(cls, 0) + 1
    return dict(sorted(counts.items()))


def global_memory_instructions(counts: dict[str, int]) -> int:
    return sum(counts.get(c, 0) for c in GLOBAL_MEMORY_CLASSES)
