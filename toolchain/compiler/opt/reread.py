"""reread: mark the global loads of loops that read the same base as another loop.

A row kernel with one subgroup per row makes several passes over its row (softmax: max,
sum of exponentials, normalise; layer norm: sums, normalise), so every row is read two or
three times while 32-64 other rows per SM are in flight: more than L1 holds at 1024
columns. A load marked `attrs["reread"] = True` tells the target that its bytes are read
by more than one loop; PTX prints it as `ld.global.L1::evict_last` (a cache priority,
never a change of result). Measured on the H200 (plainperf2 probe call, docs/gpu.md):
softmax 65536x1024 under -O 2,729-2,735 -> 2,940-2,965 GB/s with every pass's loads of the
row marked; 16384x4096 and layer norm (all its loads marked) unchanged within the call's
noise (1%). Why it helps is not measured; one reading: with every line evict_last, lines
already in L1 are kept rather than cycled out by the next rows, so part of the re-reads
hit instead of none.

The rule, on the loops as written (load-ahead calls it before unrolling, so its copies
inherit the mark): a global load in an innermost loop X whose address is a chain of
ptradd/byteadd over a base invariant in X, when another innermost loop outside X loads
through the same base (an SSA value: the row pointer, not the bytes).
"""
from __future__ import annotations

from ..ir.module import Instr

NAME = "load-ahead"               # reported with the pass that calls it
ATTR = "reread"


def _root(p):
    while isinstance(p, Instr) and p.op in ("ptradd", "byteadd"):
        p = p.operands[0]
    return p


def _global_loads(lp) -> list:
    return [i for b in lp.blocks for i in b.instrs
            if i.op == "load" and i.operands[0].type.space == "global"]


def mark(fn, analyses) -> int:
    """Mark the loads of every loop whose base another loop also reads; the count marked."""
    loops = [lp for lp in analyses.get("loops").innermost_first() if not lp.children]
    if len(loops) < 2:
        return 0
    bases = {id(lp): {id(_root(i.operands[0])) for i in _global_loads(lp)} for lp in loops}
    marked = 0
    for x in loops:
        others = set().union(*(bases[id(y)] for y in loops if y is not x))
        hits = [i for i in _global_loads(x) if id(_root(i.operands[0])) in others
                and x.is_invariant(_root(i.operands[0])) and not i.attrs.get(ATTR)]
        for ins in hits:
            ins.attrs[ATTR] = True
        if hits:
            marked += len(hits)
            analyses.remark(x.header.terminator.span, NAME,
                            f"{len(hits)} load(s) marked reread: another loop reads the same "
                            "base (kept in L1 on PTX)")
    return marked
