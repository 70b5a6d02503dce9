"""dce: delete instructions whose results nobody needs (mark and sweep, so dead phi cycles
go too), and `local.set`s of locals that no `local.get` reads (with those locals).

Roots: terminators and every op with the `effects` flag (stores, calls, atomics, barriers,
debug output, ...). Everything else is live only if a live instruction uses it.
"""
from __future__ import annotations

from ..ir import ops as O
from ..ir.module import Instr, Local


def run(fn, analyses) -> bool:
    read: set[Local] = set()
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.op == "local.get":
                read.add(ins.operands[0])
            elif ins.op != "local.set":
                read.update(o for o in ins.operands if isinstance(o, Local))
    live: set[Instr] = set()
    work: list[Instr] = []
    for b in fn.blocks:
        for ins in b.instrs:
            info = O.OPS[ins.op]
            if info.terminator or (info.effects and not (
                    ins.op == "local.set" and ins.operands[0] not in read)):
                live.add(ins)
                work.append(ins)
    while work:
        ins = work.pop()
        for o in ins.operands:
            if isinstance(o, Instr) and o not in live:
                live.add(o)
                work.append(o)
    changed = False
    for b in fn.blocks:
        if len(live.intersection(b.instrs)) != len(b.instrs):
            keep = []
            for ins in b.instrs:
                if ins in live:
                    keep.append(ins)
                else:
                    ins.block = None
            b.instrs = keep
            changed = True
    unread = [l for l in fn.locals if l not in read]
    if unread:
        fn.locals = [l for l in fn.locals if l in read]
        changed = True
    return changed
