"""Register allocation over live intervals (linear-scan intervals, priority assignment) of
a function's scalar values, for the slot-per-value selectors under -O.

    assignment = allocate(fn, registers)     # {id(value): register}

Candidates: parameters, `Local`s and instruction results of scalar type (not aggregates,
not allocas). Liveness is computed over the IR's blocks (a `local.set` defines its Local, a
`local.get` uses it); a value's interval runs from its first definition (or the start of a
block it is live into) to its last use (or the end of a block it is live out of), so loop-
carried values cover their loops. A `local.get` result shares its Local's interval and
register when the Local is not written while the result is live (`coalesce`), which keeps
loop variables in one register. Candidates are taken in decreasing spill cost (uses and
definitions weighted 8^loop depth) per unit of interval length, each into the first
register none of whose intervals overlaps its own (the rest keep their stack slots), so a
value never shares a register with a live one.

The registers given are callee-saved ones the selector never uses as scratch, so calls
(including the selector's own memcpy/memset) preserve them; the selector saves those it
uses in the prologue and restores them before returning. A register-allocated value keeps
the canonical slot form (frame.py) in its register.
"""
from __future__ import annotations

from ...ir.module import Function, Instr, Local, Param


def _scalar(t) -> bool:
    return not t.is_aggregate and t.size > 0


def _candidate(v) -> bool:
    if isinstance(v, (Param, Local)):
        return _scalar(v.type)
    return isinstance(v, Instr) and v.op != "alloca" and _scalar(v.type)


def _uses_defs(ins) -> tuple[list, list]:
    if ins.op == "local.set":
        loc, v = ins.operands
        return ([v] if _candidate(v) else []), ([loc] if _candidate(loc) else [])
    uses = [o for o in ins.operands if _candidate(o)]
    return uses, ([ins] if _candidate(ins) else [])


def intervals(fn: Function) -> dict[int, tuple[int, int, object]]:
    """{id(value): (start, end, value)} over instruction positions in block order."""
    return liveness(fn)[0]


def liveness(fn: Function):
    """(intervals, {id(block): live-out set of value ids})."""
    pos, first, last = 0, {}, {}
    block_use, block_def, succs = {}, {}, {}
    for block in fn.blocks:
        first[id(block)] = pos
        uses, defs = set(), set()
        for ins in block.instrs:
            u, d = _uses_defs(ins)
            uses |= {id(v) for v in u if id(v) not in defs}
            defs |= {id(v) for v in d}
            pos += 1
        last[id(block)] = pos - 1
        block_use[id(block)], block_def[id(block)] = uses, defs
        term = block.instrs[-1] if block.instrs else None
        succs[id(block)] = [id(t) for t in (term.targets if term is not None else [])]
    live_in = {id(b): set() for b in fn.blocks}
    live_out = {id(b): set() for b in fn.blocks}
    changed = True
    while changed:
        changed = False
        for block in reversed(fn.blocks):
            b = id(block)
            out = set().union(*(live_in[s] for s in succs[b])) if succs[b] else set()
            inn = block_use[b] | (out - block_def[b])
            if out != live_out[b] or inn != live_in[b]:
                live_out[b], live_in[b], changed = out, inn, True
    span: dict[int, list] = {}

    def touch(v, p: int) -> None:
        s = span.setdefault(id(v), [p, p, v])
        s[0], s[1] = min(s[0], p), max(s[1], p)

    values = {}
    for p_ in fn.params:
        if _candidate(p_):
            touch(p_, -1)
    pos = 0
    for block in fn.blocks:
        for ins in block.instrs:
            u, d = _uses_defs(ins)
            for v in u + d:
                values[id(v)] = v
                touch(v, pos)
            pos += 1
    values.update({id(p_): p_ for p_ in fn.params})
    for block in fn.blocks:
        b = id(block)
        for key in live_in[b]:
            touch(values[key], first[b])
        for key in live_out[b]:
            touch(values[key], last[b])
    return {k: (s[0], s[1], s[2]) for k, s in span.items()}, live_out


def coalesce(fn: Function, live_out) -> dict[int, int]:
    """{id(local.get result): id(Local)} for results that may share their Local's register:
    the Local is never written (`local.set`) while the result is live, so both always hold
    the same bits wherever the result is used."""
    alias: dict[int, int] = {}
    for block in fn.blocks:
        for ins in block.instrs:
            if ins.op == "local.get" and _candidate(ins) and _candidate(ins.operands[0]):
                alias[id(ins)] = id(ins.operands[0])
    if not alias:
        return alias
    for block in fn.blocks:
        later: set[int] = set(live_out[id(block)])   # live after the current instruction
        for ins in reversed(block.instrs):
            if ins.op == "local.set":
                loc = id(ins.operands[0])
                for r in [r for r, l in alias.items() if l == loc and r in later]:
                    del alias[r]
            u, d = _uses_defs(ins)
            later -= {id(v) for v in d}
            later |= {id(v) for v in u}
    return alias


def loop_depths(fn: Function) -> dict[int, int]:
    """{id(block): loop nesting depth}, from back edges in layout order (a branch from block
    j to an earlier-or-same block i makes blocks i..j a loop)."""
    index = {id(b): k for k, b in enumerate(fn.blocks)}
    depth = [0] * len(fn.blocks)
    for j, block in enumerate(fn.blocks):
        term = block.instrs[-1] if block.instrs else None
        for t in (term.targets if term is not None else []):
            i = index.get(id(t))
            if i is not None and i <= j:
                for k in range(i, j + 1):
                    depth[k] += 1
    return {id(b): d for b, d in zip(fn.blocks, depth)}


def weights(fn: Function) -> dict[int, float]:
    """Spill cost of each candidate: its uses and definitions, each weighted 8^loop depth."""
    depth = loop_depths(fn)
    w: dict[int, float] = {}
    for block in fn.blocks:
        scale = 8.0 ** min(depth[id(block)], 6)
        for ins in block.instrs:
            u, d = _uses_defs(ins)
            for v in u + d:
                w[id(v)] = w.get(id(v), 0.0) + scale
    return w


def allocate(fn: Function, registers) -> dict[int, object]:
    """{id(value): register}: groups (a Local with the local.get results coalesced into it,
    else one value) in decreasing spill cost per unit of interval length each take the first
    register none of whose intervals overlaps theirs."""
    ivs, live_out = liveness(fn)
    w = weights(fn)
    alias = coalesce(fn, live_out)
    groups: dict[int, list[int]] = {}
    for key in ivs:
        groups.setdefault(alias.get(key, key) if alias.get(key) in ivs else key, []).append(key)
    span = {g: (min(ivs[k][0] for k in ks), max(ivs[k][1] for k in ks))
            for g, ks in groups.items()}
    cost = {g: sum(w.get(k, 0.0) for k in ks) for g, ks in groups.items()}
    order = sorted(groups, key=lambda g: (-cost[g] / (span[g][1] - span[g][0] + 1), span[g]))
    taken: dict[object, list[tuple[int, int]]] = {r: [] for r in registers}
    out: dict[int, object] = {}
    for g in order:
        start, end = span[g]
        for reg in registers:
            if all(end < s or e < start for s, e in taken[reg]):
                taken[reg].append((start, end))
                out.update({k: reg for k in groups[g]})
                break
    return out
