"""copyprop: replace copies by their source.

Copies in this IR are: conversions to the same type (convert/bitcast/addrspacecast whose
operand already has the result type), `select c, x, x`, and webs of phis that only pass
one value around (a loop-carried variable the loop never changes: `x1 = phi [x0, x2]`,
`x2 = phi [x1, x1]` is x0). A web is found by walking phi operands through phis only; if
every non-phi value reached is the same value v, every phi in the web is v.
"""
from __future__ import annotations

from ..ir.module import Instr, UseMap, sweep_blocks
from ..ir.types import FloatType, IntType


def run(fn, analyses) -> bool:
    uses: UseMap | None = None         # built on the first rewrite (most runs make none)
    changed = False
    dead: set = set()
    for b in fn.blocks:
        for ins in b.instrs:
            op = ins.op
            if op not in _CANDIDATES:              # (most instructions: no call)
                continue
            if op in _CASTS:                       # _copy_source's cast test, inline
                src = ins.operands[0]
                t, rt = src.type, ins.type
                if t is not rt:
                    c = t.__class__                # (Type == is slow: records' generic eq)
                    if c is not rt.__class__:
                        continue
                    if c is IntType:
                        if t.bits != rt.bits or t.signed != rt.signed:
                            continue
                    elif c is FloatType:
                        if t.bits != rt.bits:
                            continue
                    elif t.size != rt.size or t != rt:
                        continue
            else:
                src = _copy_source(ins)
            if src is not None and src is not ins:
                uses = uses or analyses.get("uses")
                uses.replace_all(ins, src)
                uses.erase(ins, dead)
                changed = True
    for b in fn.blocks:
        for phi in b.instrs:            # (the lists change only at the sweep below)
            if phi.op != "phi":
                break                   # phis open their block
            if phi in dead or _two_sources(phi):
                continue
            web, sources = _web(phi)
            if len(sources) == 1:
                uses = uses or analyses.get("uses")
                v = next(iter(sources.values()))
                for p in web:
                    uses.replace_all(p, v)
                for p in web:
                    uses.erase(p, dead)
                changed = True
    sweep_blocks(fn, dead)
    return changed


_CASTS = frozenset(("convert", "bitcast", "addrspacecast"))
_CANDIDATES = _CASTS | {"select"}


def _two_sources(phi: Instr) -> bool:
    """Whether the phi's own arms already name two values other than phis (the web then
    has two sources; most phis, checked without walking the web)."""
    first = None
    for v in phi.operands:
        if v.__class__ is not Instr or v.op != "phi":
            if first is None:
                first = v
            elif v is not first:
                return True
    return False


def _copy_source(ins: Instr):
    op, ops = ins.op, ins.operands
    if op in _CASTS:
        # `is`, the class and the size first: Type == is slow (records' generic __eq__)
        t, rt = ops[0].type, ins.type
        return ops[0] if t is rt or (t.__class__ is rt.__class__ and t.size == rt.size and
                                     t == rt) else None
    if op == "select" and ops[1] is ops[2]:
        return ops[1]
    return None


def _web(phi: Instr, limit: int = 64):
    seen: list[Instr] = []
    mark: set = set()
    sources: dict[int, object] = {}
    work = [phi]
    while work:
        p = work.pop()
        if p in mark:
            continue
        mark.add(p)
        seen.append(p)
        if len(seen) > limit or len(sources) > 1:
            return seen, {0: None, 1: None}
        for v in p.operands:
            if isinstance(v, Instr) and v.op == "phi":
                work.append(v)
            else:
                sources[id(v)] = v
    return seen, sources
