"""inline-recursive: a small self-recursive host function inlines copies of itself.

Deep recursion is slow mostly per call: once it is deeper than the CPU's return-address
predictor (16-32 entries), every return mispredicts, besides the prologue and epilogue.
Inlining a recursive call into itself k times leaves one real call per k+1 levels (gcc
-O2 does the same, up to 8 levels).

Runs after tail-recursion and inline, in slot form. The body as it stands (tail calls
already loops) is kept as a template; each round inlines the template at every call of
the function to itself that the last round left (inline.inline_call), and the copies'
calls still call the function. Rounds stop at DEPTH, or before the function would grow
past BUDGET instructions (a body with two recursive calls doubles each round), or before
the copies' frame arrays (each copy has its own) would pass FRAME bytes: a real call's
frame grows with every level inlined into it, and a function recursing only a few times
over a big local array must not overflow the stack where the original would not. Only
functions of at most TEMPLATE instructions qualify. Host only: device code may not
recurse at all (device_program refuses it after the optimizer, whatever -O did).
"""
from __future__ import annotations

from ..ir.module import Function
from .clone import clone_blocks
from .inline import inline_call

NAME = "inline-recursive"
TEMPLATE = 48
DEPTH = 8
BUDGET = 480
FRAME = 4096


def _size(fn: Function) -> int:
    return sum(len(b.instrs) for b in fn.blocks)


def _self_calls(fn: Function) -> list:
    return [i for b in fn.blocks for i in b.instrs
            if i.op == "call" and i.operands[0] is fn]


def _frame_bytes(ins) -> int:
    if ins.op == "alloca":
        return max(ins.attrs["type"].size, 1)
    if ins.op == "gpu.alloc":
        return max(ins.attrs["elem"].size * int(ins.attrs["count"]), 1)
    return 0


def _template(fn: Function) -> Function:
    """A detached copy of `fn`'s body with its parameters, locals and name (inline_call
    maps those to the call's arguments and fresh locals); its calls still name `fn`."""
    blocks, _ = clone_blocks(fn, fn.blocks, {}, "", used=set())
    return Function(fn.name, fn.params, fn.ret, fn.kind, blocks, list(fn.locals))


def run(fn: Function, analyses) -> bool:
    if analyses.gpu or fn.is_kernel or not fn.blocks:
        return False
    calls = _self_calls(fn)
    if not calls:
        return False
    size = _size(fn)
    if size > TEMPLATE or any(p.type.is_aggregate for p in fn.params) or \
            fn.ret.is_aggregate:
        return False
    frame = sum(_frame_bytes(i) for b in fn.blocks for i in b.instrs)
    template = _template(fn)
    depth, total, copies = 0, size, 1
    while calls and depth < DEPTH and total + len(calls) * size <= BUDGET and \
            (copies + len(calls)) * frame <= FRAME:
        for call in calls:
            call.operands[0] = template      # inline_call copies its callee's body
            inline_call(fn, call)
        total += len(calls) * size
        copies += len(calls)
        depth += 1
        calls = _self_calls(fn)
    if depth:
        analyses.remark(fn.span, NAME, f"inlined {fn.name} into itself "
                        f"{depth} level{'s' if depth > 1 else ''} deep "
                        f"({size} instructions each, {total} in all)")
    return depth > 0
