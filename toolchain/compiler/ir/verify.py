"""IR verifiers: structure (every compile) and SSA (after optimizer passes).

`verify_function` is the cheap structural check every compile runs: blocks terminated,
targets in the function, operands defined. `verify_function(fn, ssa=True)` adds what the
optimizer must keep true: each definition dominates its uses (a phi's incoming value
dominates the end of its predecessor), phis open their block with exactly one arm per
predecessor edge (two edges from one block, `cbr c, x, x`, carry one value), and operand
types agree with the op (binary ops, compares, selects,
loads/stores, local.set, branches, returns, calls).

Raises `CompileError` with E0400 (an internal-consistency failure, i.e. a frontend or pass
bug, reported plainly rather than as a backend crash).
"""
from __future__ import annotations

from ..diagnostics import CompileError, Diagnostic
from . import ops as O
from .module import Const, Function, Instr, Local, Module, Param
from .types import BOOL, I64, VOID


def _fail(fn: Function, msg: str, span=None) -> CompileError:
    return CompileError(Diagnostic("E0400", f"invalid IR in @{fn.name}: {msg}", span))


def verify_function(fn: Function, ssa: bool = False) -> None:
    if fn.is_extern:
        if fn.blocks:
            raise _fail(fn, "extern function has a body")
        return
    if not fn.blocks:
        raise _fail(fn, "function has no blocks")
    blocks = set(map(id, fn.blocks))
    locals_ = set(map(id, fn.locals))
    defined: set[int] = set()
    for b in fn.blocks:
        if b.terminator is None:
            raise _fail(fn, f"block {b.name} does not end in a terminator")
        for i, ins in enumerate(b.instrs):
            if ins.op not in O.OPS:
                raise _fail(fn, f"unknown op {ins.op}", ins.span)
            if O.OPS[ins.op].terminator and i != len(b.instrs) - 1:
                raise _fail(fn, f"terminator {ins.op} in the middle of {b.name}", ins.span)
            for t in ins.targets:
                if id(t) not in blocks:
                    raise _fail(fn, f"branch to a block of another function", ins.span)
            for o in ins.operands:
                if isinstance(o, Local) and id(o) not in locals_:
                    raise _fail(fn, f"local ${o.name} not declared", ins.span)
            defined.add(id(ins))
    for ins in fn.instructions():
        for o in ins.operands:
            if isinstance(o, Instr) and id(o) not in defined:
                raise _fail(fn, f"{ins.op} uses a value not defined in this function",
                            ins.span)
    if ssa:
        _verify_ssa(fn)


_BINOPS = ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max")


def _verify_ssa(fn: Function) -> None:
    from .cfg import DomTree, block_predecessors
    preds = block_predecessors(fn)
    dom = DomTree(fn, preds)
    pos: dict[Instr, int] = {}
    for b in fn.blocks:
        for i, ins in enumerate(b.instrs):
            pos[ins] = i
            if ins.block is not b:
                raise _fail(fn, f"{ins.op} in {b.name} records another block", ins.span)
    params = set(fn.params)
    for b in dom.rpo:
        seen_non_phi = False
        for i, ins in enumerate(b.instrs):
            if ins.op == "phi":
                if seen_non_phi:
                    raise _fail(fn, f"phi after a non-phi in {b.name}", ins.span)
                if sorted(map(id, ins.targets)) != sorted(map(id, preds[b])):
                    raise _fail(fn, f"phi in {b.name} does not have one arm per "
                                "predecessor", ins.span)
                seen: dict = {}
                for v, p in ins.incoming:
                    if not _same_value(seen.setdefault(p, v), v):
                        raise _fail(fn, f"phi in {b.name} gives two values for the two edges "
                                    f"from {p.name}", ins.span)
                    _check_def(fn, dom, pos, params, v, p, len(p.instrs), ins)
            else:
                seen_non_phi = True
                for v in ins.operands:
                    _check_def(fn, dom, pos, params, v, b, i, ins)
            _check_types(fn, ins)


def _same_value(a, b) -> bool:
    """Identity, or two constants of one type and one bit pattern."""
    if a is b:
        return True
    return isinstance(a, Const) and isinstance(b, Const) and a.type == b.type and \
        repr(a.value) == repr(b.value)


def _check_def(fn, dom, pos, params, v, block, index, user) -> None:
    """`v` must be available at position `index` of `block`."""
    if isinstance(v, Param):
        if v not in params:
            raise _fail(fn, f"{user.op} uses a parameter of another function", user.span)
        return
    if not isinstance(v, Instr):
        return
    if v.type == VOID:
        raise _fail(fn, f"{user.op} uses the result of {v.op}, which has none", user.span)
    d = v.block
    if d is block:
        if pos[v] >= index:
            raise _fail(fn, f"{user.op} in {block.name} uses {v.op} before its definition",
                        user.span)
    elif d is None or not dom.dominates(d, block):
        raise _fail(fn, f"{user.op} in {block.name} uses {v.op} of "
                    f"{d.name if d else '?'}, which does not dominate it", user.span)


def _check_types(fn: Function, ins: Instr) -> None:
    op, ops = ins.op, ins.operands

    def need(cond: bool, what: str) -> None:
        if not cond:
            raise _fail(fn, f"{op}: {what}", ins.span)

    if op in _BINOPS:
        need(len(ops) == 2 and ops[0].type == ops[1].type == ins.type,
             "operand and result types differ")
    elif op == "phi":
        need(all(v.type == ins.type for v in ops), "an incoming value has another type")
    elif op in ("neg", "not"):
        need(ops[0].type == ins.type, "operand and result types differ")
    elif op == "cmp":
        need(ins.type == BOOL and ops[0].type == ops[1].type, "bad compare types")
    elif op == "select":
        need(ops[0].type == BOOL and ops[1].type == ops[2].type == ins.type,
             "bad select types")
    elif op == "cbr":
        need(ops[0].type == BOOL, "condition is not bool")
    elif op == "vec.extract":
        vt = ops[0].type
        need(vt.is_vector and vt.elem == ins.type and 0 <= ins.attrs.get("index", -1)
             < vt.count, "bad vec.extract")
    elif op == "vec.insert":
        vt = ops[0].type
        need(vt.is_vector and vt == ins.type and ops[1].type == vt.elem
             and 0 <= ins.attrs.get("index", -1) < vt.count, "bad vec.insert")
    elif op == "load":
        need(ops[0].type.is_ptr and ops[0].type.pointee == ins.type, "bad load types")
    elif op == "store":
        need(ops[0].type.is_ptr and ops[0].type.pointee == ops[1].type, "bad store types")
    elif op == "local.set":
        need(ops[0].type == ops[1].type, "value type differs from the local's")
    elif op == "local.get":
        need(ops[0].type == ins.type, "result type differs from the local's")
    elif op == "ret":
        need((fn.ret == VOID) == (not ops) and all(v.type == fn.ret for v in ops),
             "returned value does not match the function")
    elif op in ("ptradd", "byteadd"):
        need(ops[0].type.is_ptr and ins.type == ops[0].type and ops[1].type == I64,
             "needs a pointer, an i64 and the pointer's type as result")
    elif op == "convert":
        src = ops[0].type
        need((src.is_int or src.is_float or src.is_bool) and
             (ins.type.is_int or ins.type.is_float or ins.type.is_bool),
             f"cannot convert {src} to {ins.type}")
    elif op == "call":
        callee = ops[0]
        need(isinstance(callee, Function) and len(ops) - 1 == len(callee.params) and
             all(a.type == p.type for a, p in zip(ops[1:], callee.params)),
             "arguments do not match the callee")


def verify_module(m: Module, ssa: bool = False) -> None:
    for fn in m.functions.values():
        verify_function(fn, ssa)
