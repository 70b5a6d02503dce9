"""reread: mark the global loads of loops that read the same base as another loop.

A row kernel with one subgroup per row makes several passes over its row (softmax: max,
sum of exponentials, normalise; layer norm: sums, normalise), so every row is read two or
three times while 32-64 other rows per SM are in flight: more than L1 holds at 1024
columns. A load marked `attrs["reread"] = True` tells the target that its bytes are read
by more than one loop; PTX prints it as `ld.global.L1::evict_last` (a cache priority,
never a change of result). Measured on the H200 (plainperf2 probe call, docs/reference/gpu.md):
softmax 65536x1024 under -O 2,729-2,735 -> 2,940-2,965 GB/s with every pass's loads of the
row marked; 16384x4096 and layer norm (all its loads marked) unchanged within the call's
noise (1%). A target without the cache priority (`analyses.target.has("L1::evict_last")`
is false: PTX ISA before 7.4, the portable profile) gets no `reread` mark. Why it helps is not measured; one reading: with every line evict_last, lines
already in L1 are kept rather than cycled out by the next rows, so part of the re-reads
hit instead of none.

The rule, on the loops as written (load-ahead calls it before unrolling, so its copies
inherit the mark): a global load in an innermost loop X whose address is a chain of
ptradd/byteadd over a base invariant in X, when another innermost loop outside X loads
through the same base (an SSA value: the row pointer, not the bytes).

The access policy for re-read rows (STREAM, on: measured in docs/internals/optimizer.md). The
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


def mark(fn, analyses, nest=None) -> int:
    """Mark the loads of every loop whose base another loop also reads; the count marked.
    `nest`: the loops innermost first, when the caller has them."""
    if nest is None:
        nest = analyses.get("loops").innermost_first()
    loops = [lp for lp in nest if not lp.children]
    if len(loops) < 2:
        return 0
    reads = []                  # per loop: its global loads, each with its base
    readers: dict = {}          # id(base) -> the loops that load through it
    for lp in loops:
        got = [(i, _root(i.operands[0])) for b in lp.blocks for i in b.instrs
               if i.op == "load" and i.operands[0].type.space == "global"]
        reads.append(got)
        for _, base in got:
            ys = readers.setdefault(id(base), [])
            if not ys or ys[-1] is not lp:
                ys.append(lp)
    marked = 0
    priority = analyses.target.has("L1::evict_last")
    for x, got in zip(loops, reads):
        hits = [(i, base) for i, base in got if len(readers[id(base)]) > 1
                and x.is_invariant(base) and not i.attrs.get(ATTR) and not i.attrs.get(LAST)]
        if not hits:
            continue
        last = reread = 0
        after = _after(x) if STREAM else None
        for ins, base in hits:
            # the last read: no loop that loads through `base` (`x` included) runs after `x`
            if STREAM and not any(y.header in after for y in readers[id(base)]):
                ins.attrs[LAST] = True
                last += 1
            elif priority:
                ins.attrs[ATTR] = True
                reread += 1
        span = x.header.terminator.span
        if reread:
            analyses.remark(span, NAME, f"{reread} load(s) marked reread: "
                            "another loop reads the same base (kept in L1 on PTX)")
        if last:
            analyses.remark(span, NAME, f"{last} load(s) marked last read: no loop "
                            "reads the base after this one (evict-first on PTX)")
        marked += last + reread
    if marked and STREAM:
        _mark_streams(fn, analyses, loops, readers)
    return marked


def _after(x) -> set:
    """The blocks that can run after loop `x` exits (its own header again if an outer
    cycle leads back to it)."""
    inside = x.block_set
    seen: set = set()
    work = [s for b in x.blocks for s in successors(b) if s not in inside]
    while work:
        b = work.pop()
        if b not in seen:
            seen.add(b)
            work.extend(successors(b))
    return seen


def _mark_streams(fn, analyses, loops, read_bases) -> None:
    """`stream` on the global stores of innermost loops through a base no loop loads
    (`read_bases`: the ids of the bases loops load through)."""
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
