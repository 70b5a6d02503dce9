"""Full unrolling of counted loops with a constant trip count.

A loop is unrolled when its trip count T is a known constant and either the source asked
for it (`@unroll(n)` leaves `attrs["unroll"] = n` on the loop's exit branch, and T <= n) or
the loop is small (T <= AUTO_TRIPS and T * body size <= AUTO_BUDGET instructions). The
loop must have one latch, a preheader, and a single exit edge leaving from its header (the
shape every `for`/`while` of the frontend has). Iteration i is a copy of the body whose
header phis are replaced by the values flowing in from copy i-1 (the preheader's for i = 0)
and whose exit test is dropped (it is known to hold); a final copy of the header alone takes
the exit. Uses after the loop read that final copy. Constant folding and simplify-cfg then
fold the induction variable and merge the straight-line chain, which is what lets ptxas
keep small private arrays indexed by the loop variable in registers.

Loops whose trip count is not a constant are left to the backend's own scheduler (PTX:
ptxas unrolls strided loops itself once their exit test is positive, see the PTX
peephole); a refusal of an `@unroll` loop is a remark.
"""
from __future__ import annotations

from ..ir.cfg import ensure_preheader
from ..ir.types import VOID
from .clone import clone_blocks
from .edit import make_instr, redirect

NAME = "unroll"
AUTO_TRIPS = 8
AUTO_BUDGET = 96
MAX_TRIPS = 64


def _hint(lp) -> int | None:
    for b in lp.exiting:
        n = b.terminator.attrs.get("unroll")
        if n:
            return int(n)
    return None


def _size(lp) -> int:
    return sum(len(b.instrs) for b in lp.blocks)


def _refusal(lp, hint: int | None) -> tuple[str | None, int]:
    if lp.latch is None:
        return "the loop has several latches", 0
    if lp.children:
        return "the loop contains another loop", 0
    exits = [(e, x) for e in lp.exiting for x in e.successors if not lp.contains(x)]
    if len(exits) != 1 or exits[0][0] is not lp.header:
        return "the loop does not leave only from its header test", 0
    tc = lp.trip_count()
    if tc is None or tc.count is None:
        return "the trip count is not a compile-time constant", 0
    t = tc.count
    if hint is not None:
        if t > hint:
            return f"{t} iterations exceed @unroll({hint})", t
        return None, t
    if t > AUTO_TRIPS or t * _size(lp) > AUTO_BUDGET:
        return "too large to unroll automatically", t
    return None, t


def unroll_fully(fn, lp, trips: int) -> None:
    header, latch = lp.header, lp.latch
    pre, _ = ensure_preheader(lp)
    exit_ = next(x for x in header.successors if not lp.contains(x))
    inner = next(x for x in header.successors if lp.contains(x))
    phis = header.phis
    incoming = {p: dict(zip(p.targets, p.operands)) for p in phis}
    current = {p: incoming[p][pre] for p in phis}
    copies: list = []
    prev_latch = prev_header = None
    final_map: dict = {}
    for i in range(trips + 1):
        vmap = dict(current)
        last = i == trips
        blocks = [header] if last else lp.blocks
        new, bmap = clone_blocks(fn, blocks, vmap, f".u{i}", skip=frozenset(phis))
        h = bmap[header]
        term = h.instrs[-1]
        h.instrs[-1] = make_instr("br", VOID, [], {}, [exit_ if last else bmap[inner]],
                             term.span, h)
        if prev_latch is None:
            redirect(pre.terminator, header, h)
        else:                                  # the copied back edge still names its copy
            redirect(prev_latch.terminator, prev_header, h)
        if not last:
            prev_latch, prev_header = bmap[latch], h
            current = {p: vmap.get(incoming[p][latch], incoming[p][latch]) for p in phis}
        copies.extend(new)
        final_map = vmap
    final_header = copies[-1]
    for p in exit_.phis:                       # the exit is reached from the last header
        p.operands = [final_map.get(v, v) if t is header else v
                      for v, t in zip(p.operands, p.targets)]
        p.targets = [final_header if t is header else t for t in p.targets]
    body = set(lp.blocks)
    header_vals = set(header.instrs)
    for b in fn.blocks:
        if b in body:
            continue
        for ins in b.instrs:
            ins.operands = [final_map[o] if o in header_vals and o in final_map else o
                            for o in ins.operands]
    pos = fn.blocks.index(header)
    fn.blocks[:] = [b for b in fn.blocks if b not in body]
    fn.blocks[pos:pos] = copies


def run(fn, analyses) -> bool:
    changed = False
    refused: set = set()
    while True:
        for lp in analyses.get("loops").innermost_first():
            if lp.header in refused:
                continue
            hint = _hint(lp)
            why, trips = _refusal(lp, hint)
            span = lp.header.terminator.span
            if why:
                refused.add(lp.header)
                if hint is not None:
                    analyses.remark(span, NAME, f"@unroll({hint}) loop not unrolled: {why}")
                continue
            unroll_fully(fn, lp, trips)
            how = f"@unroll({hint})" if hint is not None else "automatically"
            analyses.remark(span, NAME, f"loop unrolled fully ({trips} iterations, {how})")
            analyses.invalidate("all")
            changed = True
            break
        else:
            return changed

