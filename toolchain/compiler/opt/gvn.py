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
from ..ir.types import BoolType, FloatType, IntType
from .op_facts import PURE

_COMMUTATIVE = frozenset(("add", "mul", "and", "or", "xor"))


_SAME_TYPE = frozenset(("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr",
                        "min", "max", "neg", "not"))
_POINTER_ARITH = frozenset(("ptradd", "byteadd"))
_EFFECTS = frozenset(n for n, i in O.OPS.items() if i.effects)
_MEMORY = _EFFECTS | {"load"}           # the ops that end or make an available load


def _type_numbers():
    """A function giving small ints for types, equal for equal types. Hashing a type walks
    its fields, so a run hashes each distinct type object once and keys use the number
    instead (a closure: it is called for most keys). Scalar types are looked up by their
    fields (records' generic hash and == cost about 1 us each; the frontend makes a type
    object per instruction)."""
    by_object: dict[int, int] = {}       # id(type) -> number; types outlive a run
    by_value: dict = {}

    def tnum(t) -> int:
        n = by_object.get(id(t))
        if n is None:
            c = t.__class__
            v = (c, t.bits, t.signed) if c is IntType else (c, t.bits) if c is FloatType \
                else c if c is BoolType else t
            n = by_object[id(t)] = by_value.setdefault(v, len(by_value))
        return n
    return tnum


_CONST_KEYS = (int, bytes, tuple)        # what a constant operand's key is (bool is an int)
_MINMAX = frozenset(("min", "max"))
_EQ_NE = frozenset(("eq", "ne"))

# two-operand ops keyed as key() keys them (min/max left to it: int-only commutative)
_BINARY = (_SAME_TYPE - _MINMAX - {"neg", "not"}) | _POINTER_ARITH


def key(ins: Instr, tnum=None):
    """The value number of a pure instruction. Types are keyed only where the operands
    do not already fix them (type hashing is the expensive part of a key): an int or float
    type by its fields, any other by its number. The common shapes get flat keys (hashing
    a nested tuple costs a call per level): `(op, a, b)` for two values; for one,
    `(op, None, a)` when its type is fixed, else `(op, a, bits, signed)`, `(op, a, bits)`
    or `(op, t, a)`; `(op, pred, a, b)` for a compare of two values; `(op, kind, axis,
    bits, signed)` or `(op, t, kind, axis)` for `gpu.index`. Any other shape is `(op, t,
    operand keys, attrs)`. Shapes of one op never compare equal: they differ in length or
    in an element's kind (a value, an int, None, a string, a tuple)."""
    tnum = tnum or _type_numbers()
    operands = ins.operands
    n = len(operands)
    attrs = ins.attrs
    if n == 2:
        a, b = operands
        op = ins.op
        ca, cb = a.__class__ is Const, b.__class__ is Const
        if not ca and not cb:
            if not attrs:
                if op in _POINTER_ARITH:
                    return (op, a, b)
                if op in _SAME_TYPE:
                    if (op in _COMMUTATIVE or (op in _MINMAX and ins.type.is_int)) and \
                            id(b) < id(a):
                        return (op, b, a)
                    return (op, a, b)
            elif op == "cmp" and len(attrs) == 1:
                pred = attrs.get("pred")
                if pred.__class__ is str:
                    if pred in _EQ_NE and id(b) < id(a):
                        a, b = b, a
                    return (op, pred, a, b)
        elif ca is not cb:
            # one constant (`x + 1`, `i < 4`): _general_key's tuple, without its loops
            if not attrs:
                if op in _SAME_TYPE or (op in _POINTER_ARITH and cb):
                    pair = _const_pair(a, b, ca, op in _COMMUTATIVE or
                                       (op in _MINMAX and ins.type.is_int))
                    if pair is not None:
                        return (op, None, pair, None)
            elif op == "cmp" and len(attrs) == 1:
                pred = attrs.get("pred")
                if pred.__class__ is str:
                    pair = _const_pair(a, b, ca, pred in _EQ_NE)
                    if pair is not None:
                        return (op, None, pair, (("pred", pred),))
    elif n == 1:
        a = operands[0]
        if a.__class__ is not Const and not attrs:
            op = ins.op
            if op in _SAME_TYPE or op == "cmp" or op in _POINTER_ARITH:
                return (op, None, a)
            t = ins.type
            c = t.__class__
            return (op, a, t.bits, t.signed) if c is IntType else \
                (op, a, t.bits) if c is FloatType else (op, tnum(t), a)
    elif n == 0 and len(attrs) == 2:             # gpu.index {kind, axis}
        kind, axis = attrs.get("kind"), attrs.get("axis")
        if kind.__class__ is str and axis.__class__ is str:
            t = ins.type
            return (ins.op, kind, axis, t.bits, t.signed) if t.__class__ is IntType else \
                (ins.op, tnum(t), kind, axis)
    return _general_key(ins, tnum)


def _const_pair(a, b, a_const: bool, commutes: bool):
    """_general_key's operand keys for one constant and one value (None where it would
    order them otherwise: a constant that is no int or float)."""
    c = a.value if a_const else b.value
    if c.__class__ is float:
        c = struct.pack("<d", c)
    elif c.__class__ is not int and c.__class__ is not bool:
        return None
    if a_const:
        return (c, b)
    return (c, a) if commutes else (a, c)       # (constants first when the order is free)


def _general_key(ins: Instr, tnum):
    """key() of the shapes without a flat key: constants among the operands, attributes
    other than a compare's predicate, no operands."""
    operands = ins.operands
    op = ins.op
    attrs = ins.attrs
    if not operands:
        if attrs:
            attrs = tuple(attrs.items()) if len(attrs) == 1 else tuple(sorted(attrs.items()))
            try:
                hash(attrs)
            except TypeError:
                return None
        return (op, tnum(ins.type), (), attrs or None)
    has_value = False
    ops = []
    for o in operands:
        if o.__class__ is Const:
            v = o.value
            ops.append(struct.pack("<d", v) if v.__class__ is float else v)
        else:
            has_value = True
            ops.append(o)
    if not has_value:                       # all constants: their types tell them apart
        ops = [(k, tnum(o.type)) for k, o in zip(ops, operands)]
    if len(ops) == 2 and (op in _COMMUTATIVE or (op in _MINMAX and ins.type.is_int) or
                          (op == "cmp" and attrs.get("pred") in _EQ_NE)):
        a, b = ops
        # a canonical order (only equality matters): constants first, by repr, then
        # values by identity
        ca, cb = isinstance(a, _CONST_KEYS), isinstance(b, _CONST_KEYS)
        if (cb and not ca) or (ca and cb and repr(b) < repr(a)) or \
                (not ca and not cb and id(b) < id(a)):
            ops = [b, a]
    if attrs:
        try:
            attrs = tuple(attrs.items()) if len(attrs) == 1 else tuple(sorted(attrs.items()))
            hash(attrs)
        except TypeError:
            return None
    else:
        attrs = None
    # the result type is fixed by any value operand of a same-typed op (or a compare),
    # and by the pointer operand of ptradd/byteadd
    if op in _POINTER_ARITH:
        t = None if operands[0].__class__ is not Const else tnum(ins.type)
    else:
        t = None if has_value and (op in _SAME_TYPE or op == "cmp") else tnum(ins.type)
    return (op, t, tuple(ops), attrs)


def run(fn, analyses) -> bool:
    dom = analyses.get("domtree")
    if not dom.rpo:
        return False
    tnum = _type_numbers()
    preds = analyses.get("preds")
    no_loads: dict = {}                     # (shared, never written: copied on a change)
    end_loads: dict = {}                    # block -> the loads available at its end
    facts = None
    table: dict = {}
    setdefault = table.setdefault
    replace: dict[Instr, object] = {}
    reloads = 0                             # loads among the replaced
    phis: list = []                         # the walk's, whose operands may come later
    changed = False
    children = dom.children
    # Dominator-tree walk. `table` keeps every key it met (compile time: nothing to undo
    # when a subtree is left); an entry is available where its block is on the walk's
    # path, `path`, i.e. dominates the current block. An entry off the path is replaced
    # by the next equal value, so an equal value on the path is always the entry.
    path: dict = {}
    stack: list = [dom.rpo[0]]
    while stack:
        b = stack.pop()
        if b.__class__ is tuple:                # (b,): b's subtree is done
            del path[b[0]]
            continue
        path[b] = True
        # a block entered only from its immediate dominator continues that block's loads:
        # no instruction runs between them (the if-converter relies on this for `if (x[i] >
        # m) { m = x[i]; }`, whose second load then is the first one). The dict is shared
        # until b changes it (most blocks load nothing).
        loads = no_loads
        if end_loads:
            ps = preds.get(b, ())
            if len(ps) == 1:
                loads = end_loads.get(ps[0], no_loads)
        own = False                             # loads is b's own dict
        gone = False                            # an instruction of b was replaced
        for ins in b.instrs:
            ops = ins.operands
            if replace and not replace.keys().isdisjoint(ops):
                k = 0                           # (no enumerate: its object costs more)
                for o in ops:
                    if o in replace:
                        ops[k] = replace[o]
                    k += 1
            op = ins.op
            if op in PURE:                      # (no op of PURE is a load, store or effect)
                # key()'s commonest shapes, inline (compile time: a call per instruction)
                if op == "convert" and ops[0].__class__ is not Const and not ins.attrs:
                    t = ins.type                # (key()'s typed unary shapes, inline)
                    c = t.__class__
                    k = (op, ops[0], t.bits, t.signed) if c is IntType else \
                        (op, ops[0], t.bits) if c is FloatType else (op, tnum(t), ops[0])
                elif op in _BINARY and not ins.attrs:
                    x, y = ops
                    if x.__class__ is Const or y.__class__ is Const:
                        k = key(ins, tnum)
                    elif op in _COMMUTATIVE and id(y) < id(x):
                        k = (op, y, x)
                    else:
                        k = (op, x, y)
                elif op == "gpu.index" and not ops:  # {kind, axis}: key()'s flat shape
                    a = ins.attrs
                    kind, axis = a.get("kind"), a.get("axis")
                    if len(a) == 2 and kind.__class__ is str and axis.__class__ is str:
                        t = ins.type
                        k = (op, kind, axis, t.bits, t.signed) if t.__class__ is IntType \
                            else (op, tnum(t), kind, axis)
                    else:
                        k = key(ins, tnum)
                else:
                    k = key(ins, tnum)
                if k is not None:
                    prev = setdefault(k, ins)   # (one hash of the key when it is new)
                    if prev is not ins:
                        if prev.block in path:  # an equal value is available: use it
                            replace[ins] = prev
                            ins.block = None
                            gone = True
                            continue
                        table[k] = ins
            elif op not in _MEMORY:
                if op == "phi":
                    phis.append(ins)
                continue
            elif op == "load":
                t = ins.type                    # (scalar types by their fields, no call)
                c = t.__class__
                k = (ops[0], t.bits, t.signed) if c is IntType else \
                    (ops[0], t.bits) if c is FloatType else ("load", tnum(t), ops[0])
                prev = loads.get(k)
                if prev is not None:
                    replace[ins] = prev
                    ins.block = None
                    gone = True
                    reloads += 1
                    continue
                if not own:
                    loads, own = dict(loads), True
                loads[k] = ins
            elif op == "store":
                if loads:
                    facts = facts or analyses.get("pointers")
                    loads, own = _unaliased(loads, facts, ins), True
            else:                               # an op with effects
                loads, own = no_loads, False
        if gone:
            b.instrs = [i for i in b.instrs if i.block is b]
            changed = True
        if loads:
            end_loads[b] = loads
        kids = children[b]
        if kids:
            stack.append((b,))
            stack.extend(reversed(kids))
        else:
            del path[b]
    if replace:
        # phis (and unreachable code) name values from anywhere: settle them. Any other
        # use comes after its definition in the walk above (SSA), so it is rewritten.
        if len(dom.rpo) != len(fn.blocks):
            reached = dom.index
            phis += [i for b in fn.blocks if b not in reached for i in b.instrs]
        for ins in phis:
            k = 0
            for o in ins.operands:
                if o in replace:
                    ins.operands[k] = _final(replace, o)
                k += 1
        what = f"{len(replace)} repeated computation{'s' if len(replace) != 1 else ''}"
        analyses.remark(fn.span, "gvn", f"reused earlier values for {what}" +
                        (f" ({reloads} of them loads)" if reloads else ""))
    return changed


def _unaliased(loads: dict, facts, store: Instr) -> dict:
    """The available loads `store` cannot overwrite (analyses' pointer facts), in order."""
    p, v = store.operands
    size = v.type.size
    disjoint = facts.disjoint
    return {k: load for k, load in loads.items()
            if disjoint(load.operands[0], load.type.size, p, size)}


def _final(replace, v):
    while isinstance(v, Instr) and v in replace:
        v = replace[v]
    return v
