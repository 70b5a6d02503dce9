"""gvn: dominator-scoped common-subexpression elimination (value numbering).

Walking the dominator tree, a pure instruction whose (op, type, operands, attrs) matches
one already available in a dominating position is replaced by it; commutative integer and
float add/mul/and/or/xor/min/max (ints only for min/max) and eq/ne compares match with
their operands swapped. Address arithmetic (ptradd, byteadd, fieldptr) is pure and
numbered like any other value.

Loads are numbered inside one block, and along a chain of blocks each entered only from
its immediate dominator, until the next instruction that may write memory or synchronise
(any op with the `effects` flag: calls, atomics, barriers, async copies, tensor ops) or a
store that may overwrite them: a plain store forgets only the loads the `pointers`
analysis cannot prove disjoint from it (another address space, another allocation, the
same base at non-overlapping constant offsets).

Never numbered: anything reading lane state or memory besides plain loads (subgroup.*,
local.get, atomics), allocations (each gpu.alloc/alloca is a distinct object), phis, and
ops with effects.
"""
from __future__ import annotations

import struct

from ..ir import ops as O
from ..ir.module import Const, Instr

PURE = frozenset((
    "add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max",
    "neg", "not", "cmp", "select", "convert", "bitcast", "ptrtoint", "inttoptr",
    "addrspacecast", "ptradd", "byteadd", "fieldptr", "gpu.index",
    "cvt.h2f", "cvt.f2h", "cvt.bf2f", "cvt.f2bf", "int.dp4a", "int.dp2a", "int.prmt",
    "half2.add", "half2.mul", "half2.fma", "half2.lo", "half2.hi", "half2.pack",
    *(f"math.{n}" for n in ("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp")),
))
_COMMUTATIVE = frozenset(("add", "mul", "and", "or", "xor"))


_SAME_TYPE = frozenset(("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr",
                        "min", "max", "neg", "not"))
_POINTER_ARITH = frozenset(("ptradd", "byteadd"))
_EFFECTS = frozenset(n for n, i in O.OPS.items() if i.effects)


class _TypeNumbers:
    """Small ints for types, equal for equal types. Hashing a type walks its fields, so a
    run hashes each distinct type object once and keys use the number instead."""

    def __init__(self) -> None:
        self.by_object: dict[int, int] = {}       # id(type) -> number; types outlive a run
        self.by_value: dict = {}

    def __call__(self, t) -> int:
        n = self.by_object.get(id(t))
        if n is None:
            n = self.by_object[id(t)] = self.by_value.setdefault(t, len(self.by_value))
        return n


def key(ins: Instr, tnum=None):
    """The value number of a pure instruction. Types are numbered only where the operands
    do not already fix them (type hashing is the expensive part of a key)."""
    tnum = tnum or _TypeNumbers()
    has_value = False
    ops = []
    for o in ins.operands:
        if o.__class__ is Const:
            v = o.value
            ops.append(struct.pack("<d", v) if v.__class__ is float else v)
        else:
            has_value = True
            ops.append(o)
    if not has_value:                       # all constants: their types tell them apart
        ops = [(k, tnum(o.type)) for k, o in zip(ops, ins.operands)]
    op = ins.op
    if len(ops) == 2 and (op in _COMMUTATIVE or (op in ("min", "max") and ins.type.is_int) or
                          (op == "cmp" and ins.attrs.get("pred") in ("eq", "ne"))):
        a, b = ops
        if _order(b) < _order(a):
            ops = [b, a]
    attrs = ins.attrs
    if attrs:
        try:
            attrs = tuple(sorted(attrs.items()))
            hash(attrs)
        except TypeError:
            return None
    else:
        attrs = None
    # the result type is fixed by any value operand of a same-typed op (or a compare),
    # and by the pointer operand of ptradd/byteadd
    if op in _POINTER_ARITH:
        t = None if ins.operands[0].__class__ is not Const else tnum(ins.type)
    else:
        t = None if has_value and (op in _SAME_TYPE or op == "cmp") else tnum(ins.type)
    return (op, t, tuple(ops), attrs)


def _order(k):
    """A total order on operand keys, stable within one run (only equality matters)."""
    return (0, repr(k)) if isinstance(k, (int, bytes, tuple, bool)) else (1, id(k))


def run(fn, analyses) -> bool:
    dom = analyses.get("domtree")
    tnum = _TypeNumbers()
    preds = analyses.get("preds")
    end_loads: dict = {}
    facts = None
    table: dict = {}
    replace: dict[Instr, object] = {}
    changed = False
    stack: list[tuple] = [("enter", dom.rpo[0])] if dom.rpo else []
    while stack:
        item = stack.pop()
        if item[0] == "exit":
            for k in item[1]:
                del table[k]
            continue
        b = item[1]
        added = []
        # a block entered only from its immediate dominator continues that block's loads:
        # no instruction runs between them (the if-converter relies on this for `if (x[i] >
        # m) { m = x[i]; }`, whose second load then is the first one)
        ps = preds.get(b, ())
        loads: dict = dict(end_loads.get(ps[0], {})) if len(ps) == 1 else {}
        keep = []
        for ins in b.instrs:
            if replace:
                ops = ins.operands
                for k, o in enumerate(ops):
                    r = replace.get(o)
                    if r is not None:
                        ops[k] = r
            op = ins.op
            avail = k = None                    # the table this value is numbered in
            if op == "load":
                avail, k = loads, ("load", tnum(ins.type), ins.operands[0])
            elif op == "store":
                if loads:
                    facts = facts or analyses.get("pointers")
                    _kill_aliased(loads, facts, ins)
            elif op in _EFFECTS:
                loads.clear()
            elif op in PURE:
                k = key(ins, tnum)
                avail = table if k is not None else None
            if avail is not None:
                prev = avail.get(k)
                if prev is not None:            # an equal value is available: use it
                    replace[ins] = prev
                    ins.block = None
                    changed = True
                    continue
                avail[k] = ins
                if avail is table:
                    added.append(k)
            keep.append(ins)
        b.instrs = keep
        end_loads[b] = loads
        stack.append(("exit", added))
        for c in reversed(dom.children[b]):
            stack.append(("enter", c))
    if replace:
        for b in fn.blocks:                  # phis (and unreachable code) name values
            for ins in b.instrs:             # from anywhere: settle the rest
                ops = ins.operands
                for k, o in enumerate(ops):
                    if o.__class__ is Instr and o in replace:
                        ops[k] = _final(replace, o)
        loads = sum(1 for i in replace if i.op == "load")
        what = f"{len(replace)} repeated computation{'s' if len(replace) != 1 else ''}"
        analyses.remark(fn.span, "gvn", f"reused earlier values for {what}" +
                        (f" ({loads} of them loads)" if loads else ""))
    return changed


def _kill_aliased(loads: dict, facts, store: Instr) -> None:
    """Forget the available loads `store` may overwrite (analyses' pointer facts)."""
    p, v = store.operands
    size = v.type.size
    for k, load in list(loads.items()):
        if not facts.disjoint(load.operands[0], load.type.size, p, size):
            del loads[k]


def _final(replace, v):
    while isinstance(v, Instr) and v in replace:
        v = replace[v]
    return v
