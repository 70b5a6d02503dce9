"""if-convert: small branches that only compute values become selects.

A triangle (`A: cbr c, T, M`; `T: ...; br M`) or a diamond (`A: cbr c, T, F`; both arms
`br M`) qualifies when every arm has A as its only predecessor, holds at most ARM_LIMIT
instructions, and each of them is safe to execute when its branch would not have run:
pure, speculation-safe operations (no memory access, no integer division by a possibly
zero or -1 divisor, nothing collective or with effects). The arms' instructions move into A
before its branch, each phi of M over the converted edges becomes `select c, then, else`,
and A jumps straight to M (simplify-cfg then merges them). Branch-free loop bodies are
what lets ptxas unroll and schedule loads ahead (softmax's `if (x > m) { m = x; }`).
"""
from __future__ import annotations

from ..ir.cfg import TERMINATORS
from ..ir.module import Instr
from ..ir.types import VOID
from .edit import make_instr, speculation_safe

NAME = "if-convert"
ARM_LIMIT = 6


def _arm(block, head, preds) -> bool:
    """Whether `block` is a convertible arm of `head`: one predecessor, pure, short, and
    ends in an unconditional branch."""
    ps = preds[block]
    instrs = block.instrs
    if len(ps) != 1 or ps[0] is not head or not instrs or instrs[-1].op != "br" \
            or len(instrs) - 1 > ARM_LIMIT or instrs[0].op == "phi":
        return False
    for i in instrs[:-1]:
        if not speculation_safe(i):
            return False
    return True


def _try(fn, head, preds, analyses, touched: set) -> bool:
    """Convert at `head` if it qualifies; `touched` gains the blocks a conversion edits."""
    term = head.instrs[-1]                  # (the caller checked: a cbr)
    cond = term.operands[0]
    t, f = term.targets
    if t is f:
        return False
    # (an arm ends in `br`: its successors are its terminator's one target)
    arm_t = _arm(t, head, preds)
    if arm_t and t.instrs[-1].targets[0] is f:                # triangle, then-arm
        arms, merge = [t], f
        edge_then, edge_else = t, head
    else:
        arm_f = _arm(f, head, preds)                          # (tested once)
        if arm_f and f.instrs[-1].targets[0] is t:            # triangle, else-arm
            arms, merge = [f], t
            edge_then, edge_else = head, f
        elif arm_t and arm_f and t.instrs[-1].targets[0] is f.instrs[-1].targets[0]:
            arms, merge = [t, f], t.instrs[-1].targets[0]
            edge_then, edge_else = t, f
        else:
            return False
    if merge is head or len([p for p in preds[merge] if p in (edge_then, edge_else)]) != 2:
        return False
    at = len(head.instrs) - 1
    for arm in arms:
        for ins in arm.instrs[:-1]:
            ins.block = head
            head.instrs.insert(at, ins)
            at += 1
    for phi in merge.phis:
        inc = dict(zip(phi.targets, phi.operands))
        sel = make_instr("select", phi.type, [cond, inc[edge_then], inc[edge_else]], {}, [],
                    phi.span, head)
        head.instrs.insert(at, sel)
        at += 1
        keep = [(v, b) for v, b in zip(phi.operands, phi.targets)
                if b not in (edge_then, edge_else)]
        phi.operands = [v for v, _ in keep] + [sel]
        phi.targets = [b for _, b in keep] + [head]
    head.instrs[-1] = make_instr("br", VOID, [], {}, [merge], term.span, head)
    for arm in arms:
        fn.blocks.remove(arm)
        del preds[arm]
    preds[merge] = [p for p in preds[merge] if p not in arms]
    if head not in preds[merge]:
        preds[merge].append(head)
    touched.update((head, merge, *arms))
    what = cond.op if isinstance(cond, Instr) else "value"
    analyses.remark(term.span or getattr(cond, "span", None), NAME,
                    f"branch on {what} converted to {len(merge.phis)} select(s)")
    return True


def run(fn, analyses) -> bool:
    preds = dict(analyses.get("preds"))   # _try replaces lists, never edits one in place
    changed = False
    touched: set | None = None
    while True:                         # a conversion can expose an outer one: repeat
        # A head whose last try failed fails again unless a conversion since then touched
        # a block that try reads (its targets or theirs): only those are retried.
        seen, touched = touched, set()
        for b in list(fn.blocks):
            ins = b.instrs                  # only a block ending in cbr can be a head
            if ins and ins[-1].op == "cbr" and b in preds and \
                    (seen is None or _near(ins[-1], seen) or touched and
                     _near(ins[-1], touched)) and _try(fn, b, preds, analyses, touched):
                changed = True
        if not touched:
            return changed


def _near(term, blocks: set) -> bool:
    """Whether a head's cbr `term` reaches one of `blocks` in at most two steps."""
    for t in term.targets:
        if t in blocks:
            return True
        last = t.instrs[-1] if t.instrs else None
        if last is not None and last.op in TERMINATORS:
            for s in last.targets:
                if s in blocks:
                    return True
    return False
