"""mem2reg: promote scalar `Local` slots to SSA values (Cytron et al.; minimal SSA).

For every scalar local that only `local.get`/`local.set` touch: phis go at the iterated
dominance frontier of its writing blocks, then a walk of the dominator tree renames each
get to the value reaching it and deletes the sets. Dead phis are left for `dce`. A local
read before any write reads zero: the language zero-initializes declarations, so such a
path only exists where the frontend's slot was never observable (e.g. a phi at a loop
header for a variable declared inside the loop). Unreachable blocks are deleted first
(their gets would have no reaching definition). Locals of aggregate type stay slots.
"""
from __future__ import annotations

from ..ir.cfg import DomTree
from ..ir.module import Instr, Local
from .edit import remove_unreachable, zero


def run(fn, analyses) -> bool:
    candidates = _promotable(fn)
    if not candidates:
        return False
    if remove_unreachable(fn):
        analyses.invalidate("all")
    dom: DomTree = analyses.get("domtree")
    _place_phis(fn, dom, candidates)
    _rename(fn, dom, candidates)
    fn.locals = [l for l in fn.locals if l not in candidates]
    return True


def _promotable(fn) -> dict[Local, list]:
    ok = {l: [] for l in fn.locals if l.type.is_scalar}
    for b in fn.blocks:
        for ins in b.instrs:
            for k, o in enumerate(ins.operands):
                if isinstance(o, Local) and o in ok:
                    if k != 0 or ins.op not in ("local.get", "local.set"):
                        del ok[o]                       # another op reads the slot itself
                    elif ins.op == "local.set":
                        ok[o].append(b)
    return ok


def _place_phis(fn, dom: DomTree, cands: dict[Local, list]) -> None:
    """Insert empty phis (arms filled by _rename) tagged with their local."""
    df = dom.frontier
    # locals whose every get follows a set in the same block need no phis at all
    upward: set[Local] = set()
    for b in dom.rpo:
        written: set[Local] = set()
        for ins in b.instrs:
            if ins.op == "local.set":
                written.add(ins.operands[0])
            elif ins.op == "local.get" and ins.operands[0] not in written:
                upward.add(ins.operands[0])
    for loc, def_blocks in cands.items():
        if loc not in upward:
            continue
        has_phi: set = set()
        work = [b for b in dict.fromkeys(def_blocks) if dom.reachable(b)]
        queued = set(work)
        while work:
            b = work.pop()
            for f in df[b]:
                if f not in has_phi:
                    has_phi.add(f)
                    phi = Instr("phi", loc.type, [], {"local": loc}, [], None, f)
                    f.instrs.insert(0, phi)
                    if f not in queued:
                        queued.add(f)
                        work.append(f)


def _rename(fn, dom: DomTree, cands: dict[Local, list]) -> None:
    current: dict[Local, list] = {l: [zero(l.type)] for l in cands}
    replace: dict[Instr, object] = {}

    def value(v):
        while isinstance(v, Instr) and v in replace:
            v = replace[v]
        return v

    # iterative dominator-tree walk: ("enter", b) then ("exit", b, pushed locals)
    stack: list[tuple] = [("enter", dom.rpo[0])]
    while stack:
        item = stack.pop()
        if item[0] == "exit":
            for loc in item[2]:
                current[loc].pop()
            continue
        b = item[1]
        pushed = []
        keep = []
        for ins in b.instrs:
            if ins.op == "phi" and isinstance(ins.attrs.get("local"), Local) \
                    and ins.attrs["local"] in cands:
                loc = ins.attrs["local"]
                current[loc].append(ins)
                pushed.append(loc)
                keep.append(ins)
                continue
            if ins.op in ("local.get", "local.set") and ins.operands[0] in cands:
                loc = ins.operands[0]
                if ins.op == "local.get":
                    replace[ins] = current[loc][-1]
                else:
                    current[loc].append(value(ins.operands[1]))
                    pushed.append(loc)
                ins.block = None
                continue
            ins.operands = [value(o) if isinstance(o, Instr) else o for o in ins.operands]
            keep.append(ins)
        b.instrs = keep
        for s in b.successors:
            for phi in s.phis:
                loc = phi.attrs.get("local")
                if loc in cands:
                    phi.operands.append(current[loc][-1])
                    phi.targets.append(b)
        stack.append(("exit", b, pushed))
        for c in reversed(dom.children[b]):
            stack.append(("enter", c))
    # phi arms may name gets renamed in blocks visited later; settle them, drop the tags
    for b in dom.rpo:
        for phi in b.phis:
            phi.operands = [value(o) for o in phi.operands]
            if phi.attrs.get("local") in cands:
                phi.attrs = {}
