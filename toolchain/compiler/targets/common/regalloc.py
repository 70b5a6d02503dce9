"""Register allocation over live ranges with holes (linear-scan ranges, priority assignment)
of a function's scalar values, for the slot-per-value selectors under -O.

    assignment = allocate(fn, registers)     # {id(value): register}
    assignment = allocate(fn, callee_saved, volatile=(r8, r9), float_registers=xmms,
                          clobbers=lambda ins: ins.op == "call", entry_clobbers={r8})

Candidates: parameters, `Local`s and instruction results of scalar type (not aggregates,
not allocas). Instruction k (block order) has a use point 2k, where it reads its operands,
and a def point 2k+1, where it writes its result; parameters are written at point -1 (the
prologue). Liveness is computed over the IR's blocks (a `local.set` defines its Local, a
`local.get` uses it), and a value's live range is the exact set of points where it holds
a value still needed: a loop-carried value covers its loop, a Local is free between its last
read and its next write. So an operand that dies at an instruction may share a register with
that instruction's result: the selectors read every operand before writing the result.

Coalescing: a `local.get` result joins its Local when the Local is not written while the
result is live; then a `local.set` source joins its Local when their ranges do not meet
(hottest copies first). Loop variables thus live in one register and their copies vanish.
Groups are taken in decreasing spill cost (uses and definitions weighted 8^loop depth) per
live point, each into the register of the result or first operand it is paired with when
that is free (x86's two-address forms then need no copy), else into the first register of
its class (floats into `float_registers` when given, else with the integers) that holds
nothing live at any of its points; the rest keep their stack slots.

`volatile` registers (listed before the callee-saved ones so leaf code needs no saves) are
only given to groups not live at the use point of an instruction for which `clobbers(ins)`
holds (calls, and whatever the selector implements with a call). `entry_clobbers` lists
registers a parameter may not take (the prologue reads argument registers in order).
The callee-saved registers given are ones the selector never uses as scratch; the selector
saves those it uses in the prologue. A register-allocated value keeps the canonical slot
form (frame.py) in its register.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

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


def _block_sets(fn: Function):
    block_use, block_def, succs = {}, {}, {}
    for block in fn.blocks:
        uses, defs = set(), set()
        for ins in block.instrs:
            u, d = _uses_defs(ins)
            uses |= {id(v) for v in u if id(v) not in defs}
            defs |= {id(v) for v in d}
        block_use[id(block)], block_def[id(block)] = uses, defs
        term = block.instrs[-1] if block.instrs else None
        succs[id(block)] = [id(t) for t in (term.targets if term is not None else [])]
    return block_use, block_def, succs


def live_sets(fn: Function) -> dict[int, set[int]]:
    """{id(block): ids of the values live out of it}."""
    block_use, block_def, succs = _block_sets(fn)
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
    return live_out


def live_ranges(fn: Function, live_out=None):
    """({id(value): sorted disjoint [(first, last)] points}, {id(value): value})."""
    live_out = live_sets(fn) if live_out is None else live_out
    values = {id(p): p for p in fn.params if _candidate(p)}
    segs: dict[int, list[list[int]]] = {k: [[-1, -1]] for k in values}
    pos = 0
    for block in fn.blocks:
        first = 2 * pos
        pos += len(block.instrs)
        end = 2 * pos - 1
        open_at: dict[int, int] = {k: end for k in live_out[id(block)]}
        for k, ins in zip(range(pos - 1, -1, -1), reversed(block.instrs)):
            u, d = _uses_defs(ins)
            for v in d:
                values[id(v)] = v
                last = open_at.pop(id(v), 2 * k + 1)
                segs.setdefault(id(v), []).append([2 * k + 1, last])
            for v in u:
                values[id(v)] = v
                open_at.setdefault(id(v), 2 * k)
        for key, last in open_at.items():
            segs.setdefault(key, []).append([first, last])
    return {k: _merge(s) for k, s in segs.items() if k in values}, values


def _merge(segs: list[list[int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(segs):
        if out and s <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def overlaps(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def intervals(fn: Function) -> dict[int, tuple[int, int, object]]:
    """{id(value): (first point, last point, value)}: the hull of each live range."""
    ranges, values = live_ranges(fn)
    return {k: (r[0][0], r[-1][1], values[k]) for k, r in ranges.items()}


def liveness(fn: Function):
    """(intervals, {id(block): live-out set of value ids})."""
    live_out = live_sets(fn)
    ranges, values = live_ranges(fn, live_out)
    return {k: (r[0][0], r[-1][1], values[k]) for k, r in ranges.items()}, live_out


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


class _Groups:
    """Union-find over value ids, each root holding its members' merged live range."""

    def __init__(self, ranges) -> None:
        self.parent = {k: k for k in ranges}
        self.range = dict(ranges)

    def find(self, k: int) -> int:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: int, b: int, check: bool) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or (check and overlaps(self.range[ra], self.range[rb])):
            return
        self.parent[rb] = ra
        self.range[ra] = _merge([list(s) for s in self.range[ra] + self.range.pop(rb)])


def groups(fn: Function):
    """({root id: member ids}, {root id: merged live range}, {id: value}) after coalescing
    (see the module docstring)."""
    live_out = live_sets(fn)
    ranges, values = live_ranges(fn, live_out)
    g = _Groups(ranges)
    for r, loc in coalesce(fn, live_out).items():
        if r in ranges and loc in ranges:
            g.union(loc, r, check=False)
    depth = loop_depths(fn)
    copies = [(-depth[id(b)], ins) for b in fn.blocks for ins in b.instrs
              if ins.op == "local.set" and id(ins.operands[1]) in ranges
              and id(ins.operands[0]) in ranges]
    for _, ins in sorted(copies, key=lambda c: c[0]):
        loc, v = ins.operands
        if loc.type.is_float == v.type.is_float:
            g.union(id(loc), id(v), check=True)
    out: dict[int, list[int]] = {}
    for k in ranges:
        out.setdefault(g.find(k), []).append(k)
    return out, g.range, values


def calls_out(ins) -> bool:
    """Whether a slot-per-value selector may call while selecting `ins` (or set up call
    arguments): calls, launches, and anything moving aggregate bytes (a big copy calls
    memcpy). The usual `clobbers` predicate for `allocate`."""
    return ins.op in ("call", "call_indirect", "gpu.launch", "memcpy") or \
        ins.type.is_aggregate or any(o.type.is_aggregate for o in ins.operands
                                     if getattr(o, "type", None) is not None)


# Operations a selector computes best in operand a's register (x86 two-address forms).
_TWO_ADDRESS = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max", "neg",
                "not", "convert")


def _clobber_points(fn: Function, clobbers) -> list[int]:
    pts, k = [], 0
    for block in fn.blocks:
        for ins in block.instrs:
            if clobbers(ins):
                pts.append(2 * k)
            k += 1
    return pts


class _Busy:
    """The disjoint points segments a register already holds, sorted: overlap tests and
    insertions by bisection (allocation stays near-linear in big functions)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, rng) -> bool:
        for s, e in rng:     # the last held segment starting at or before e is the only
            i = bisect_right(self.starts, e) - 1       # candidate (they are disjoint)
            if i >= 0 and self.ends[i] >= s:
                return True
        return False

    def add(self, rng) -> None:
        for s, e in rng:
            i = bisect_right(self.starts, s)
            self.starts.insert(i, s)
            self.ends.insert(i, e)


def _live_at_any(rng, points: list[int]) -> bool:
    for s, e in rng:
        i = bisect_left(points, s)
        if i < len(points) and points[i] <= e:
            return True
    return False


def allocate(fn: Function, registers, volatile=(), float_registers=(),
             clobbers=None, entry_clobbers=(), folded=frozenset()) -> dict[int, object]:
    """{id(value): register} (see the module docstring). `registers` are callee-saved
    integer registers; `volatile` caller-saved integer ones; `float_registers` caller-saved
    float ones (with none, floats take integer registers, as bits). `folded`: ids of
    results the selector never materialises (folded into their single user right after
    them), which need no register."""
    members, ranges, values = groups(fn)
    root = {k: g for g, ks in members.items() for k in ks}
    prefer: dict[int, list[int]] = {}     # two-address hint: a result likes operand a's reg
    for ins in fn.instructions():
        if ins.op in _TWO_ADDRESS and id(ins) in root and ins.operands and \
                id(ins.operands[0]) in root:
            r, a = root[id(ins)], root[id(ins.operands[0])]
            prefer.setdefault(r, []).append(a)     # whichever is allocated second
            prefer.setdefault(a, []).append(r)     # takes the other's register if free
    w = weights(fn)
    points = _clobber_points(fn, clobbers) if clobbers is not None else []
    cost = {g: sum(w.get(k, 0.0) for k in ks) for g, ks in members.items()}
    size = {g: sum(e - s + 1 for s, e in ranges[g]) for g in members}
    order = sorted(members, key=lambda g: (-cost[g] / size[g], ranges[g][0]))
    taken: dict[object, _Busy] = {}
    out: dict[int, object] = {}
    for g in order:
        if any(k in folded for k in members[g]):
            continue
        rng = ranges[g]
        is_float = values[g].type.is_float
        has_param = any(isinstance(values[k], Param) for k in members[g])
        across_call = _live_at_any(rng, points)
        if is_float and float_registers:
            pool = () if across_call else float_registers
        else:
            pool = (() if across_call else tuple(volatile)) + tuple(registers)
        hinted = [out[members[h][0]] for h in prefer.get(g, ()) if members[h][0] in out]
        for reg in [r for r in hinted if r in pool] + list(pool):
            if has_param and reg in entry_clobbers:
                continue
            busy = taken.setdefault(reg, _Busy())
            if not busy.overlaps(rng):
                busy.add(rng)
                out.update({k: reg for k in members[g]})
                break
    return out
