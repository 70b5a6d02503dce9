"""dce: delete instructions whose results nobody needs (mark and sweep, so dead phi cycles
go too), and `local.set`s of locals that no `local.get` reads (with those locals).

Roots: terminators and every op with the `effects` flag (stores, calls, atomics, barriers,
debug output, ...). Everything else is live only if a live instruction uses it.
"""
from __future__ import annotations

from ..ir import ops as O
from ..ir.module import Instr, Local


_ROOTS = frozenset(n for n, i in O.OPS.items() if i.terminator or i.effects)


def run(fn, analyses) -> bool:
    read: set[Local] = set()
    roots = _ROOTS
    live: set[Instr] = set()
    work: list[Instr] = []
    sets: list[Instr] = []               # roots only if their local is read: decided below
    count = _roots(fn, roots, live, work) if not fn.locals else None
    if count is None:
        count = _scan(fn, roots, read, live, work, sets)
    if "local.set" in roots:
        for ins in sets:
            if ins.operands[0] in read:
                live.add(ins)
                work.append(ins)
    while work:
        for o in work.pop().operands:
            if o.__class__ is Instr and o not in live:
                live.add(o)
                work.append(o)
    changed = False
    if len(live) != count:
        for b in fn.blocks:
            for ins in b.instrs:                # (most blocks lose nothing: no list)
                if ins not in live:
                    break
            else:
                continue
            for ins in b.instrs:
                if ins not in live:
                    ins.block = None
            b.instrs = [ins for ins in b.instrs if ins in live]
            changed = True
    if len(read) != len(fn.locals):
        unread = [l for l in fn.locals if l not in read]
        if unread:
            fn.locals = [l for l in fn.locals if l in read]
            changed = True
    if changed:               # no terminator, edge or live phi changed: nothing to simplify
        analyses.keep_fixpoint("simplify-cfg")
    return changed


def _roots(fn, roots, live, work) -> int | None:
    """A function without locals (SSA, before out-of-SSA) has no slot to read: only the
    roots to find (compile time). None, with nothing found, if a slot op shows up."""
    count = 0
    for b in fn.blocks:
        instrs = b.instrs
        count += len(instrs)
        for ins in instrs:
            op = ins.op
            if op in roots:
                if op == "local.set":
                    live.clear()
                    work.clear()
                    return None
                live.add(ins)
                work.append(ins)
            elif op == "local.get":
                live.clear()
                work.clear()
                return None
    return count


def _scan(fn, roots, read, live, work, sets) -> int:
    """The roots, the locals something reads, and the local.sets (decided by the caller)."""
    count = 0
    for b in fn.blocks:
        count += len(b.instrs)
        for ins in b.instrs:
            op = ins.op
            if op == "local.get":
                read.add(ins.operands[0])
            elif op == "local.set":
                sets.append(ins)
                continue
            else:
                for o in ins.operands:
                    if o.__class__ is Local:
                        read.add(o)
            if op in roots:
                live.add(ins)
                work.append(ins)
    return count
