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
            ops = ins.operands
            if op in _CASTS:                       # a cast to its own type
                src = ops[0]
                if not _same_type(src.type, ins.type):
                    continue
            elif ops[1] is ops[2]:                 # select c, x, x
                src = ops[1]
            else:
                continue
            if src is not ins:
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
    if dead:
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


def _same_type(t, rt) -> bool:
    """t == rt, scalar types by their fields first (Type == is slow: records' generic eq,
    and `size` is a property)."""
    if t is rt:
        return True
    c = t.__class__
    if c is not rt.__class__:
        return False
    if c is IntType:
        return t.bits == rt.bits and t.signed == rt.signed
    if c is FloatType:
        return t.bits == rt.bits
    return t.size == rt.size and t == rt


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
