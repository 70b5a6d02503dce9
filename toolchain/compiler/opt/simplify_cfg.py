"""simplify-cfg: constant and same-target branches, unreachable blocks, straight-line merges.

Rewrites, repeated until none applies:
- `cbr true/false, A, B` -> `br` to the taken side (the other side loses its phi arm);
- `cbr c, A, A` -> `br A`;
- blocks the entry cannot reach are deleted;
- a block whose single predecessor ends in `br` to it is merged into that predecessor
  (its phis have one arm: they become that value);
- a trivial phi (every arm the same value, or the phi itself) is replaced by that value.
Empty forwarding blocks are kept: they are where out-of-SSA and loop passes put code.
"""
from __future__ import annotations

from ..ir.cfg import block_predecessors
from ..ir.module import Const, Instr
from ..ir.types import VOID
from .edit import remove_phi_arm, remove_unreachable


NAME = "simplify-cfg"


def run(fn, analyses) -> bool:
    if analyses.at_fixpoint(NAME):
        return False                        # nothing changed that could give it work
    changed = cfg = False
    first = True
    while True:
        did, edges, replaced = _round(fn, first)
        if not did:
            break
        changed, first, cfg = True, False, cfg or edges
        if not replaced:
            break       # only replaced values can give the next round work (_round)
    if cfg:
        analyses.cfg_changed = True        # otherwise only phis went: the CFG stands
    analyses.reached_fixpoint(NAME, changed)
    return changed


def _round(fn, first: bool) -> tuple[bool, bool, bool]:
    """One sweep of every rewrite: (anything changed, an edge or block went, a phi was
    replaced). Only a folded branch makes a block unreachable (merges and phi replacements
    keep reachability), so after the first round the unreachable walk runs only when this
    round folded one. A round leaves work for another only through the values it
    substituted for phis (a branch condition that became constant, a phi whose arms became
    one value): folds and deletions precede the phi scan, and the merges see every block
    with its predecessors kept current, so without a replacement the next round would
    change nothing."""
    changed = False
    for b in fn.blocks:
        if not b.instrs:
            continue
        term = b.instrs[-1]                     # (the `terminator` property is slower)
        if term.op != "cbr":
            continue
        c = term.operands[0]
        then, other = term.targets
        if isinstance(c, Const):
            keep, drop = (then, other) if c.value else (other, then)
        elif then is other:
            keep, drop = then, None
        else:
            continue
        if drop is not None and drop is not keep:
            remove_phi_arm(drop, b)
        elif drop is None:
            remove_phi_arm(keep, b)            # two arms from b became one edge
        b.instrs[-1] = Instr("br", VOID, [], {}, [keep], term.span, b)
        changed = True
    if (first or changed) and remove_unreachable(fn):
        changed = True
    cfg = changed                               # (so far only folds and deletions)
    preds = block_predecessors(fn)
    repl: dict = {}                             # phi -> the value replacing it
    for b in fn.blocks:
        if not b.instrs or b.instrs[0].op != "phi":
            continue
        for phi in b.phis:
            first = None
            for v in phi.operands:
                if v is not phi and v is not first:
                    if first is not None:
                        break
                    first = v
            else:
                if first is not None:
                    repl[phi] = first
                    b.instrs.remove(phi)
    merged: set = set()
    for b in list(fn.blocks):
        if b in merged or b is fn.blocks[0]:
            continue
        ps = preds.get(b, [])
        if len(ps) != 1:
            continue
        p = ps[0]
        if p is b or p in merged or not p.instrs or p.instrs[-1].op != "br":
            continue
        for phi in b.phis:                      # one predecessor: one arm
            repl[phi] = phi.operands[0]
        body = [i for i in b.instrs if i.op != "phi"]
        p.instrs.pop()
        for ins in body:
            ins.block = p
        p.instrs.extend(body)
        for s in b.successors:
            for phi in s.phis:
                phi.targets = [p if t is b else t for t in phi.targets]
            preds[s] = [p if x is b else x for x in preds[s]]
        merged.add(b)
        changed = cfg = True
    if merged:
        fn.blocks = [b for b in fn.blocks if b not in merged]
    if repl:
        _replace(fn, repl)
        changed = True
    return changed, cfg, bool(repl)


def _replace(fn, repl: dict) -> None:
    """Apply phi -> value replacements in one walk (a value may itself be replaced)."""
    def final(v):
        while v in repl:
            v = repl[v]
        return v
    for b in fn.blocks:
        for ins in b.instrs:
            ops = ins.operands
            for k, o in enumerate(ops):
                if o in repl:
                    ops[k] = final(o)
