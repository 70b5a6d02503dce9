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

from ..ir.cfg import DomTree, successors
from ..ir.module import Instr, Local
from .edit import make_instr, remove_unreachable, zero


def run(fn, analyses) -> bool:
    candidates, upward = _promotable(fn)
    if not candidates:
        return False
    dom: DomTree = analyses.get("domtree")
    if len(dom.rpo) != len(fn.blocks) and remove_unreachable(fn):
        analyses.invalidate("all")
        dom = analyses.get("domtree")
        upward = _upward(dom.rpo)               # gets of the deleted blocks no longer count
    _rename(fn, dom, candidates, _place_phis(dom, candidates, upward))
    fn.locals = [l for l in fn.locals if l not in candidates]
    return True


def _promotable(fn) -> tuple[dict[Local, list], set[Local]]:
    """(promotable local -> its writing blocks, the locals some block reads before writing
    them): one walk over the instructions."""
    ok = {l: [] for l in fn.locals if l.type.is_scalar}
    upward: set[Local] = set()
    if not ok:
        return ok, upward
    for b in fn.blocks:
        written: set[Local] = set()
        for ins in b.instrs:
            op = ins.op
            if op == "local.get":
                if ins.operands[0] not in written:
                    upward.add(ins.operands[0])
            elif op == "local.set":
                loc, v = ins.operands
                written.add(loc)
                if loc in ok:
                    ok[loc].append(b)
                if v.__class__ is Local:
                    ok.pop(v, None)
            else:
                for o in ins.operands:
                    if o.__class__ is Local:
                        ok.pop(o, None)                 # another op reads the slot itself
    return ok, upward


def _upward(blocks) -> set[Local]:
    """The locals some block of `blocks` reads (local.get) before writing them."""
    upward: set[Local] = set()
    for b in blocks:
        written: set[Local] = set()
        for ins in b.instrs:
            op = ins.op
            if op == "local.set":
                written.add(ins.operands[0])
            elif op == "local.get" and ins.operands[0] not in written:
                upward.add(ins.operands[0])
    return upward


def _place_phis(dom: DomTree, cands: dict[Local, list], upward: set[Local]) -> dict:
    """Insert empty phis (arms filled by _rename); returns block -> [(phi, local)]. Locals
    whose every get follows a set in the same block (not in `upward`) need no phis."""
    df = dom.frontier
    placed: dict = {}
    for loc, def_blocks in cands.items():
        if loc not in upward:
            continue
        has_phi: set = set()
        work = list(dict.fromkeys(def_blocks))
        queued = set(work)
        while work:
            for f in df.get(work.pop(), ()):
                if f not in has_phi:
                    has_phi.add(f)
                    phi = make_instr("phi", loc.type, [], {}, [], None, f)
                    f.instrs.insert(0, phi)
                    placed.setdefault(f, []).append((phi, loc))
                    if f not in queued:
                        queued.add(f)
                        work.append(f)
    return placed


def _rename(fn, dom: DomTree, cands: dict[Local, list], placed: dict) -> None:
    current: dict[Local, list] = {l: [zero(l.type)] for l in cands}
    replace: dict[Instr, object] = {}      # get -> the (final) value it reads
    get = replace.get
    phi_local = {phi: loc for arms in placed.values() for phi, loc in arms}

    # iterative dominator-tree walk: a block enters it, the list of the locals it pushed
    # (when any) leaves it
    stack: list = [dom.rpo[0]]
    children = dom.children
    while stack:
        b = stack.pop()
        if b.__class__ is list:
            for loc in b:
                current[loc].pop()
            continue
        pushed = []
        keep = []
        for ins in b.instrs:
            op = ins.op
            ops = ins.operands
            if op == "local.get":
                loc = ops[0]
                if loc in cands:
                    replace[ins] = current[loc][-1]
                    ins.block = None
                    continue
            elif op == "local.set":
                loc = ops[0]
                if loc in cands:
                    v = ops[1]
                    current[loc].append(get(v, v))
                    pushed.append(loc)
                    ins.block = None
                    continue
            elif op == "phi":
                loc = phi_local.get(ins)
                if loc is not None:
                    current[loc].append(ins)
                    pushed.append(loc)
                    keep.append(ins)
                    continue
            if replace:                     # (no enumerate: its object costs more)
                k = 0
                for o in ops:
                    if o in replace:
                        ops[k] = replace[o]
                    k += 1
            keep.append(ins)
        b.instrs = keep
        if placed:
            for s in successors(b):
                for phi, loc in placed.get(s, ()):
                    phi.operands.append(current[loc][-1])
                    phi.targets.append(b)
        if pushed:
            stack.append(pushed)
        stack.extend(reversed(children[b]))
    # phi arms may name gets renamed in blocks visited later; settle them
    for arms in placed.values():
        for phi, _ in arms:
            ops = phi.operands
            phi.operands = list(map(get, ops, ops))
