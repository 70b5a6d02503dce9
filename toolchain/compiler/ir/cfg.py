"""CFG utilities shared by the IR verifiers and passes: orders, predecessors, post-dominators."""
from __future__ import annotations

from .module import Block, Function


def reverse_postorder(fn: Function) -> list[Block]:
    seen: set[int] = set()
    order: list[Block] = []
    stack: list[tuple[Block, int]] = [(fn.blocks[0], 0)] if fn.blocks else []
    seen.add(id(fn.blocks[0])) if fn.blocks else None
    while stack:
        blk, i = stack.pop()
        succ = blk.successors
        if i < len(succ):
            stack.append((blk, i + 1))
            nxt = succ[i]
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append((nxt, 0))
        else:
            order.append(blk)
    order.reverse()
    return order


def predecessors(fn: Function) -> dict[int, list[Block]]:
    preds: dict[int, list[Block]] = {id(b): [] for b in fn.blocks}
    for b in fn.blocks:
        for s in b.successors:
            preds[id(s)].append(b)
    return preds


def immediate_postdominators(fn: Function) -> dict[int, Block | None]:
    """ipdom per block id (None = the virtual exit). Iterative Cooper-Harvey-Kennedy on the
    reverse CFG; blocks that cannot reach an exit (infinite loops) get None."""
    blocks = reverse_postorder(fn)
    exits = [b for b in blocks if not b.successors]
    # post-order of the reverse graph = reverse of a reverse-graph RPO; compute numbering
    preds = predecessors(fn)
    order: list[Block] = []
    seen: set[int] = set()
    for e in exits:
        stack = [(e, 0)]
        seen.add(id(e))
        while stack:
            blk, i = stack.pop()
            ps = preds[id(blk)]
            if i < len(ps):
                stack.append((blk, i + 1))
                if id(ps[i]) not in seen:
                    seen.add(id(ps[i]))
                    stack.append((ps[i], 0))
            else:
                order.append(blk)
    num = {id(b): i for i, b in enumerate(order)}   # exit-side blocks have high numbers
    EXIT = len(order)
    ipdom: dict[int, int] = {}

    for e in exits:
        ipdom[id(e)] = EXIT
    changed = True
    while changed:
        changed = False
        for b in reversed(order):
            if not b.successors:
                continue
            cands = [num[id(s)] for s in b.successors if id(s) in ipdom]
            if not cands:
                continue
            new = cands[0]
            for c in cands[1:]:
                new = _meet(new, c, ipdom, order, EXIT)
            if ipdom.get(id(b)) != new:
                ipdom[id(b)] = new
                changed = True
    return {id(b): (None if ipdom.get(id(b), EXIT) == EXIT else order[ipdom[id(b)]])
            for b in fn.blocks}


def _meet(a: int, b: int, ipdom: dict[int, int], order: list[Block], exit_: int) -> int:
    while a != b:
        while a < b:
            a = ipdom[id(order[a])]
        while b < a:
            b = ipdom[id(order[b])]
    return a


def region_until(start: list[Block], stop: Block | None) -> list[Block]:
    """Blocks reachable from `start` without passing through `stop`."""
    out: list[Block] = []
    seen: set[int] = set()
    work = list(start)
    while work:
        b = work.pop()
        if b is stop or id(b) in seen:
            continue
        seen.add(id(b))
        out.append(b)
        work.extend(b.successors)
    return out
