"""Structural IR verifier: blocks terminated, targets in the function, operand definitions.

Raises `CompileError` with E0400 (an internal-consistency failure, i.e. a frontend or pass
bug, reported plainly rather than as a backend crash).
"""
from __future__ import annotations

from ..diagnostics import CompileError, Diagnostic
from . import ops as O
from .module import Function, Instr, Local, Module


def _fail(fn: Function, msg: str, span=None) -> CompileError:
    return CompileError(Diagnostic("E0400", f"invalid IR in @{fn.name}: {msg}", span))


def verify_function(fn: Function) -> None:
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


def verify_module(m: Module) -> None:
    for fn in m.functions.values():
        verify_function(fn)
