"""licm: loop-invariant code motion into the loop's preheader (innermost loops first).

An instruction moves when every operand is defined outside the loop (or was itself moved)
and it is safe to execute even when the loop body would not have run:
- pure and speculation-safe ops (gvn.PURE minus integer div/rem, which trap on x86-64
  for a zero divisor; they move only with a nonzero constant divisor other than -1);
- loads, only when the loop is a counted loop (`Loop.trip_count()`), contains no
  instruction with memory effects other than plain stores (no call, atomic, barrier,
  async copy, tensor op), every store provably writes other bytes (the `pointers`
  analysis: another space or allocation, or other constant offsets of the same base),
  the pointer is invariant, and the load runs on every iteration that completes (its
  block dominates every exiting block) or the loop is known to run at least once.
A preheader is created when the loop lacks one. Each hoist is an `--explain` remark.
"""
from __future__ import annotations

from ..ir import ops as O
from ..ir.cfg import ensure_preheader
from ..ir.module import Const, Instr
from .edit import speculation_safe


def run(fn, analyses) -> bool:
    changed = False
    loops = analyses.get("loops")
    if not loops.loops:
        return False                       # no loop: no dominator tree to build
    dom = analyses.get("domtree")
    for lp in loops.innermost_first():
        if _hoist(fn, lp, dom, analyses):
            changed = True
    if changed and not analyses.cfg_changed:   # moved pure values only: no new block
        analyses.keep_fixpoint("simplify-cfg")
    return changed


_EFFECTS_OP = {n: i.effects for n, i in O.OPS.items()}
_UNSET = object()


def _folds_into_access(ins: Instr) -> bool:
    """A constant offset from a private (stack) allocation: every access folds it into its
    addressing mode, so hoisting only lengthens a live range, and on PTX a hoisted
    `depot + 16` hides the constant offsets ptxas needs to keep a private array in
    registers (measured: layernorm_rows went from 0 to 224 bytes of stack)."""
    return ins.op in ("ptradd", "byteadd", "fieldptr") and ins.type.is_ptr \
        and ins.type.space == "private" \
        and all(isinstance(o, Const) for o in ins.operands[1:])


def _untouched(load: Instr, stores: list, facts) -> bool:
    """No store of the loop may write the invariant load's bytes (a store's address may
    vary per iteration; `disjoint` compares base objects, spaces and, for one base with
    the same dynamic part, constant offsets, which then are the same every iteration)."""
    p, size = load.operands[0], load.type.size
    return all(facts.disjoint(p, size, s.operands[0], s.operands[1].type.size)
               for s in stores)


def _safe(ins: Instr) -> bool:
    return not _folds_into_access(ins) and speculation_safe(ins)


def _memory(lp) -> tuple[list, bool]:
    """The loop's stores, and whether it has another instruction with memory effects."""
    stores = []
    has_effects = False
    for b in lp.blocks:
        for i in b.instrs:
            if i.op == "store":
                stores.append(i)
            elif _EFFECTS_OP.get(i.op):
                has_effects = True
    return stores, has_effects


def _hoist(fn, lp, dom, analyses) -> bool:
    mem = None                             # (_memory), found when a load asks (most loops:
    tc = _UNSET                            # none has invariant operands); the trip count too
    moved: list[Instr] = []
    moved_set: set = set()
    inside = lp.block_set
    for b in lp.blocks:
        for ins in b.instrs:
            if ins.op == "phi":
                continue
            for o in ins.operands:         # hoistable: every operand is invariant
                if o.__class__ is Instr and o.block in inside and o not in moved_set:
                    break
            else:
                if ins.op == "load":
                    if mem is None:
                        mem = _memory(lp)
                    stores, has_effects = mem
                    if has_effects:
                        continue
                    if tc is _UNSET:
                        tc = lp.trip_count()
                    if tc is None:
                        continue
                    runs_once = tc.count is not None and tc.count >= 1
                    if not (runs_once or all(dom.dominates(b, e) for e in lp.exiting)):
                        continue
                    if stores and not _untouched(ins, stores, analyses.get("pointers")):
                        continue
                elif not _safe(ins):
                    continue
                moved.append(ins)
                moved_set.add(ins)
    if not moved:
        return False
    pre, created = ensure_preheader(lp)
    if created:
        analyses.cfg_changed = True
    where = lp.header.instrs[-1].span
    for ins in moved:
        ins.block.instrs.remove(ins)
        pre.insert(len(pre.instrs) - 1, ins)
        analyses.remark(ins.span or where, "licm",
                        f"hoisted {ins.op} out of the loop at {lp.header.name}")
    return True
