"""simplify-cfg: constant and same-target branches, unreachable blocks, straight-line merges.

Rewrites, repeated until none applies:
- `cbr true/false, A, B` -> `br` to the taken side (the other side loses its phi arm);
- `cbr c, A, A` -> `br A`;
- blocks the entry cannot reach are deleted;
- a block whose single predecessor ends in `br` to it is merged into that predecessor
  (its phis have one arm: they become that value);
- a trivial phi (every arm the same value, or the phi itself) is replaced by that value.
Empty forwarding blocks are kept: they are where out-of-SSA and loop passes put code.
When a run only merged blocks, a cached dominator tree follows the merges
(`DomTree.merged`) instead of being dropped: gvn, next in the pipeline, reads it.
"""
from __future__ import annotations

from ..ir.cfg import TERMINATORS, block_predecessors, successors
from ..ir.module import Const
from ..ir.types import VOID
from .edit import make_instr, remove_phi_arm


NAME = "simplify-cfg"


def run(fn, analyses) -> bool:
    if analyses.at_fixpoint(NAME):
        return False                        # nothing changed that could give it work
    changed = cfg = folded = False
    into: dict = {}                         # merged block -> the block it went into
    first = True
    while True:
        did, edges, again, cut = _round(fn, first, into)
        if not did:
            break
        changed, first, cfg, folded = True, False, cfg or edges, folded or cut
        if not again:
            break       # the substitutions left no work (_round): a new round finds none
    if cfg:
        dom = analyses.peek("domtree")
        if folded or dom is None:
            analyses.cfg_changed = True    # otherwise only phis went: the CFG stands
        else:                               # merges only: the tree follows them (compile
            preds = block_predecessors(fn)  # time: gvn would rebuild it next)
            dom.merged(into, preds)
            analyses.replace("preds", preds)
            analyses.invalidate(("loops",))
    analyses.reached_fixpoint(NAME, changed)
    return changed


def _round(fn, first: bool, into: dict) -> tuple[bool, bool, bool, bool]:
    """One sweep of every rewrite: (anything changed, an edge or block went, another round
    has work, a branch was folded or a block deleted); merges are recorded in `into`. A
    round leaves work for another only through the values it substituted for phis: folds
    and deletions precede the phi scan, and the merges see every block with its
    predecessors kept current. So another round has work exactly when a substitution made
    a branch condition constant or a phi trivial (`_replace` checks both). Only a folded
    branch makes a block unreachable (merges and phi replacements keep reachability)."""
    if not fn.blocks:
        return False, False, False, False
    sole = None if first else _sole_preds(fn)   # (None also when a branch is to be folded)
    cut = False
    if sole is None:
        sole, cut = _reach_folding(fn)
        if len(sole) != len(fn.blocks):
            _remove_unreached(fn, sole)
            cut = True
    changed = cfg = cut                     # (so far only folds and deletions)
    repl: dict = {}                         # phi -> the value replacing it
    merged: set = set()
    entry = fn.blocks[0]
    # One walk: each block's trivial phis go, then the block merges into its sole
    # predecessor (phis read only operands, merges only terminators and phi targets, so
    # the two rewrites of a block do not see each other's order).
    for b in fn.blocks:
        instrs = b.instrs
        if instrs and instrs[0].op == "phi":
            kept = []
            n = 0
            for phi in instrs:
                if phi.op != "phi":
                    break
                n += 1
                only = _sole_value(phi)
                if only is not None:
                    repl[phi] = only
                    continue
                kept.append(phi)
            if len(kept) != n:
                instrs[:n] = kept
        if b is entry:
            continue
        p = sole[b]                             # (every block left is reached)
        if p is None or p is b:
            continue
        instrs = b.instrs
        n = 0
        for phi in instrs:                      # one predecessor: one arm
            if phi.op != "phi":
                break
            repl[phi] = phi.operands[0]
            n += 1
        body = instrs[n:] if n else instrs
        p.instrs.pop()
        for ins in body:
            ins.block = p
        p.instrs.extend(body)
        for s in successors(b):                 # (b's terminator now ends p too)
            for phi in s.instrs:
                if phi.op != "phi":
                    break
                phi.targets = [p if t is b else t for t in phi.targets]
            if sole[s] is b:                    # (so a merged block is never a sole
                sole[s] = p                     # predecessor)
        merged.add(b)
        into[b] = p
        changed = cfg = True
    if merged:
        fn.blocks = [b for b in fn.blocks if b not in merged]
    if repl:
        return True, cfg, _replace(fn, repl), cut
    return changed, cfg, False, cut


# A block's sole predecessor, all that merges need of the predecessor map: the block
# whose `br` is the one edge into it, else None (no edge, several edges, or one from a
# `cbr`). The `br` moves with a merge, so it still ends the block a sole predecessor is
# renamed to.
def _sole_preds(fn) -> dict | None:
    """Each block's sole predecessor (above), when every block is known to be reached (no
    fold since the last deletion); None when a branch is to be folded (then
    `_reach_folding` folds it)."""
    terms = TERMINATORS
    sole: dict = {}
    for b in fn.blocks:
        ins = b.instrs
        if ins:
            term = ins[-1]
            op = term.op
            if op == "cbr":
                then, other = term.targets
                if then is other or term.operands[0].__class__ is Const:
                    return None
            elif op not in terms:
                continue
            for s in term.targets:
                sole[s] = None if s in sole else b if op == "br" else None
    return sole


def _reach_folding(fn) -> tuple[dict, bool]:
    """Each block's sole predecessor among the blocks the entry reaches (keyed by exactly
    those), folding on the way every reached `cbr` on a constant or to one block twice
    into a `br` (the dropped arm leaves its phis); whether it folded one. One walk serves
    as the fold, the reachability test and the predecessor map. An unreached block keeps
    its branch: it is deleted with all its phi arms anyway."""
    terms = TERMINATORS
    entry = fn.blocks[0]
    sole: dict = {entry: None}
    reached = [entry]
    folded = False
    for b in reached:                       # (it grows as the walk goes)
        ins = b.instrs
        if not ins:
            continue
        term = ins[-1]
        op = term.op
        if op == "cbr":
            then, other = term.targets
            if then is other or term.operands[0].__class__ is Const:
                _fold(b, term)
                folded = True
                term, op = ins[-1], "br"
        elif op not in terms:
            continue
        for s in term.targets:
            if s in sole:
                sole[s] = None
            else:
                sole[s] = b if op == "br" else None
                reached.append(s)
    return sole, folded


def _fold(b, term) -> None:
    """Fold `b`'s `cbr` `term`, whose condition is constant or whose targets are one block,
    into a `br`."""
    c = term.operands[0]
    then, other = term.targets
    if c.__class__ is Const:
        keep, drop = (then, other) if c.value else (other, then)
    else:
        keep, drop = then, None
    if drop is not None and drop is not keep:
        remove_phi_arm(drop, b)
    elif drop is None:
        remove_phi_arm(keep, b)                # two arms from b became one edge
    b.instrs[-1] = make_instr("br", VOID, [], {}, [keep], term.span, b)


def _remove_unreached(fn, live: dict) -> None:
    """Delete the blocks missing from `live`, and their phi arms in the live blocks."""
    dead = [b for b in fn.blocks if b not in live]
    for b in dead:
        for s in b.successors:
            if s in live:
                remove_phi_arm(s, b)
    fn.blocks = [b for b in fn.blocks if b in live]


def _replace(fn, repl: dict) -> bool:
    """Apply phi -> value replacements in one walk (a value may itself be replaced);
    whether that gave another round work: a branch condition became a constant, or a
    phi whose arms changed became trivial."""
    def final(v):
        while v in repl:
            v = repl[v]
        return v
    phis = []
    work = False
    for b in fn.blocks:
        for ins in b.instrs:
            ops = ins.operands
            for o in ops:
                if o in repl:
                    break
            else:
                continue
            for k, o in enumerate(ops):
                if o in repl:
                    ops[k] = final(o)
            if ins.op == "phi":
                phis.append(ins)
            elif ins.op == "cbr" and isinstance(ops[0], Const):
                work = True
    if work:
        return True
    for phi in phis:
        if _sole_value(phi) is not None:
            return True
    return False


def _sole_value(phi):
    """The one value a trivial phi takes (its arms name only it and itself), else None."""
    first = None
    for v in phi.operands:
        if v is not phi and v is not first:
            if first is not None:
                return None
            first = v
    return first
