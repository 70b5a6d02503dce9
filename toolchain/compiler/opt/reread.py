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

The access policy for re-read rows (STREAM, on: measured in docs/optimizer.md). The
-O softmax at 65536x1024 ran 2,732 GB/s at 64 warps per SM and 3,765 with the same SASS at
40; one model is L2 capacity: 64 warps x 132 SMs x 4 KiB rows is 34.6 MB of rows waiting
for their next pass while the output and the rows already finished age out of the same
L2 only as fast as anything else. With STREAM on, the loads of the last loop to read a
base (no loop that reads it, itself included, can run after it exits) are marked
`last_read` instead (PTX `ld.global.cs`: evict-first in L1 and L2, the row's last
use), and in a function with such a row, the global stores in innermost loops through a
base no loop loads are marked `stream` (`st.global.cs`: the output is not read back
here). Both are cache priorities: results never change.
"""
from __future__ import annotations

from ..ir.cfg import successors
from ..ir.module import Instr

NAME = "load-ahead"               # reported with the pass that calls it
ATTR = "reread"
LAST = "last_read"
STORE = "stream"
STREAM = True                     # the access policy above; plain_kernels.py A/Bs it (-O no-stream)


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
                and x.is_invariant(_root(i.operands[0])) and not i.attrs.get(ATTR)
                and not i.attrs.get(LAST)]
        after = _after(x) if STREAM and hits else set()
        last = {id(i) for i in hits
                if STREAM and _is_last(x, _root(i.operands[0]), loops, bases, after)}
        for ins in hits:
            ins.attrs[LAST if id(ins) in last else ATTR] = True
        span = x.header.terminator.span
        if len(hits) > len(last):
            analyses.remark(span, NAME, f"{len(hits) - len(last)} load(s) marked reread: "
                            "another loop reads the same base (kept in L1 on PTX)")
        if last:
            analyses.remark(span, NAME, f"{len(last)} load(s) marked last read: no loop "
                            "reads the base after this one (evict-first on PTX)")
        marked += len(hits)
    if marked and STREAM:
        _mark_streams(fn, analyses, loops, set().union(*bases.values()))
    return marked


def _after(x) -> set:
    """The blocks that can run after loop `x` exits (its own header again if an outer
    cycle leads back to it)."""
    seen: set = set()
    work = [s for b in x.blocks for s in successors(b) if not x.contains(s)]
    while work:
        b = work.pop()
        if id(b) not in seen:
            seen.add(id(b))
            work.extend(successors(b))
    return seen


def _is_last(x, base, loops, bases, after) -> bool:
    """No loop that loads through `base` (`x` included) can run after `x`."""
    return not any(id(y.header) in after for y in loops if id(base) in bases[id(y)])


def _mark_streams(fn, analyses, loops, read_bases) -> None:
    """`stream` on the global stores of innermost loops through a base no loop loads."""
    for x in loops:
        stores = [i for b in x.blocks for i in b.instrs if i.op == "store"
                  and i.operands[0].type.space == "global" and not i.attrs.get(STORE)
                  and x.is_invariant(_root(i.operands[0]))
                  and id(_root(i.operands[0])) not in read_bases]
        for ins in stores:
            ins.attrs[STORE] = True
        if stores:
            analyses.remark(x.header.terminator.span, NAME,
                            f"{len(stores)} store(s) marked streaming: no loop reads their "
                            "base, and the function re-reads rows (evict-first on PTX)")
