"""Instruction-class view of PTX files: function bodies and instruction-class counts.

A `.ptx` file on disk is genuinely text, so it is read with the compiler's PTX text reader
(toolchain/compiler/targets/ptx/parse.py) into the same `PtxInstr` objects the backend
builds; classes come from each object's opcode name (`ld.global.nc.v4.f32`), not from
re-lexing statements here. Counts are static (a loop body counts once) and say nothing
about dynamic traffic. Declarations without a body (prototypes) are skipped. Classes are
stable names; an opcode matching no rule counts as `alu`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from toolchain.compiler.targets.ptx.instr import DIRECTIVE, OP, PtxInstr
from toolchain.compiler.targets.ptx.parse import parse_module

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
    statements: list[PtxInstr] = field(default_factory=list)    # instructions
    directives: list[PtxInstr] = field(default_factory=list)    # .reg, .local, .param ...


def split_functions(text: str) -> list[PtxFunction]:
    """Every function definition in source order; raises ValueError on unbalanced braces."""
    out = []
    for fn in parse_module(text).functions:
        out.append(PtxFunction(fn.name, fn.kind, [i for i in fn.body if i.kind == OP],
                               [i for i in fn.body if i.kind == DIRECTIVE]))
    return out


def opcode(statement: PtxInstr) -> str:
    """The dotted opcode name of an instruction (`ld.global.nc.v4.f32`)."""
    return statement.name


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
