"""constfold: constant folding and propagation to a fixed point.

Every instruction whose operands are all constants is evaluated by `fold.py` (the exact
language semantics) and replaced by the constant; users are revisited, so constants flow
through whole expression chains. Also: `select` on a constant condition or with equal
arms, phis whose arms are all one value, and integer identities that hold for every
input (x+0, x-0, x*1, x*0, x&0, x|0, x^0, x<<0, x>>0, x/1). Float identities are left
alone (x+0.0 is not x for x = -0.0). Conditional branches on folded constants are left to
simplify-cfg, which owns the CFG.
"""
from __future__ import annotations

from ..ir.module import Const, Instr, UseMap, replace_all_uses_with, sweep_blocks
from ..ir.types import IntType
from .fold import fold


def run(fn, analyses) -> bool:
    # Most runs rewrite nothing or once or twice: the first rewrites find their users by a
    # walk each (a UseMap costs a walk that records every operand); later ones use one. The
    # order of rewrites may differ from a UseMap's, but not the result: each rewrite
    # replaces a value by an equal one and keeps every other candidate rewritable.
    uses: UseMap | None = analyses.peek("uses")     # a kept one must stay exact: use it
    scans = 0
    # every rewrite below needs a constant operand, except phis and selects of one value:
    # all operands constant (folding) or an integer identity's op. The rest are reached
    # only as users of a rewritten value (the same order of rewrites, fewer no-op tries).
    work = []
    for b in fn.blocks:
        for i in b.instrs:
            op = i.op
            if op not in _OPS:              # never rewritten: no operand count needed
                continue
            if op == "phi":
                ops = i.operands
                if len(ops) == 2:               # (most phis) _simplify's test, inline:
                    a, b = ops                  # two values, not both constants: kept
                    if a is not b and a is not i and b is not i and \
                            (a.__class__ is not Const or b.__class__ is not Const):
                        continue
                work.append(i)
                continue
            if op == "select":
                work.append(i)
                continue
            n = 0
            for o in i.operands:
                if o.__class__ is Const:
                    n += 1
            if n and (n == len(i.operands) or op in _IDENTITY_OPS):
                work.append(i)
    changed = False
    dead: set = set()
    while work:
        ins = work.pop()
        if ins in dead or ins.block is None:
            continue
        new = _simplify(ins)
        if new is None or new is ins:
            continue
        if uses is None and scans < _SCANS:   # (no kept UseMap to keep exact: see below)
            scans += 1
            users = replace_all_uses_with(fn, ins, new)   # (dead ones: skipped when popped)
            dead.add(ins)
        else:
            if uses is None:
                sweep_blocks(fn, dead)          # (dead ones out of the new map's user lists)
                uses = analyses.get("uses")
            users = list(dict.fromkeys(uses.uses(ins)))
            uses.replace_all(ins, new)
            uses.erase(ins, dead)
        work.extend(users)
        changed = True
    if dead:
        sweep_blocks(fn, dead)
    return changed


_SCANS = 4      # rewrites found by walking the function before a UseMap pays for itself


def _simplify(ins: Instr):
    op = ins.op
    if op == "phi":
        # one value besides the phi itself, or equal constants (distinct objects)
        first = None
        for v in ins.operands:
            if v is ins or v is first:
                continue
            if first is None:
                first = v
            elif v.__class__ is not Const or first.__class__ is not Const or \
                    not _same_const(v, first):
                return None
        return first
    if op == "select":
        c, a, b = ins.operands
        if isinstance(c, Const):
            return a if c.value else b
        if a is b or (isinstance(a, Const) and isinstance(b, Const) and _same_const(a, b)):
            return a
        return None
    for o in ins.operands:
        if o.__class__ is not Const:
            break               # not foldable (most candidates): only an identity can apply
    else:
        c = fold(ins)
        if c is not None:
            return c
    if isinstance(ins.type, IntType) and len(ins.operands) == 2:
        return _identity(ins)
    return None


def _same_const(a: Const, b: Const) -> bool:
    if a.type != b.type:
        return False
    if a.type.is_float:
        import struct
        fmt = "<d"
        return struct.pack(fmt, a.value) == struct.pack(fmt, b.value)
    return a.value == b.value


_IDENTITY_OPS = frozenset(("add", "or", "xor", "sub", "shl", "shr", "mul", "and", "div"))
# every op _simplify can rewrite: phis, selects, and what fold() or _identity() handle
_OPS = frozenset(("phi", "select", "add", "sub", "mul", "div", "rem", "and", "or", "xor",
                  "shl", "shr", "min", "max", "neg", "not", "cmp", "convert"))


def _is(v, n: int) -> bool:
    return isinstance(v, Const) and isinstance(v.value, int) and v.value == n


def _identity(ins: Instr):
    op = ins.op
    a, b = ins.operands
    if op in ("add", "or", "xor"):
        if _is(b, 0):
            return a
        if _is(a, 0):
            return b
    elif op in ("sub", "shl", "shr"):
        if _is(b, 0):
            return a
    elif op == "mul":
        if _is(b, 1):
            return a
        if _is(a, 1):
            return b
        if _is(a, 0) or _is(b, 0):
            return Const(ins.type, 0)
    elif op == "and":
        if _is(a, 0) or _is(b, 0):
            return Const(ins.type, 0)
    elif op == "div":
        if _is(b, 1):
            return a
    return None
