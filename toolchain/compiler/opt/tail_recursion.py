"""tail-recursion: a host function's calls of itself in tail position become a loop.

Runs first, on the frontend's slot form (so inline then copies the loop, and mem2reg builds
its phis). A tail site is a block ending

    r = call @self(args); ret r                  (or a void call, then `ret`)
    r = call @self(args); v = OP x, r; ret v     (accumulator recursion, r OP x too)

with OP one of add, mul, and, or, xor on an integer type: associative and commutative,
exactly so in two's complement, which is what lets `x OP f(...)` be computed as a running
value (LLVM's tailcallelim "accumulator recursion"). fib's `return fib(n-1) + fib(n-2)`
keeps its first call and loops on the second. The rewrite: the parameters are read
through slots set on entry; a site sets them to its arguments (and folds x into the
accumulator slot) and branches back to the old entry block; every other `ret v` returns
`acc OP v` (the accumulator starts at OP's identity). One OP per function (the first
site's); sites with another OP stay calls. A site also clears the function's own locals:
a call starts with fresh (zero) slots, and a path may read one before writing it (mem2reg
and dce drop the clearing wherever nothing reads it).

Not done: functions with aggregate locals or parameters (no zero constant to clear them
with; struct copies stay the backends' business); GPU code (device_program refuses
recursion after the optimizer, so looping a device helper at -O would accept a program
-O0 refuses); functions with frame slots (alloca): a callee may read the caller's slot
through a pointer argument, and a loop would reuse that slot while the value is still
wanted.
"""
from __future__ import annotations

from ..ir.module import Block, Const, Function, Instr, Local, Param
from ..ir.types import VOID
from .edit import fresh_block_name, make_instr, zero

NAME = "tail-recursion"
ACCUMULATE = ("add", "mul", "and", "or", "xor")
_FRAME = ("alloca", "gpu.alloc")


def _identity(op: str, t) -> Const:
    return Const(t, t.wrap(1 if op == "mul" else -1 if op == "and" else 0))


def _site(fn: Function, b: Block):
    """(call, accumulating op or None) when `b` ends in a tail self-call, else None."""
    ins = b.instrs
    term = ins[-1] if ins else None
    if term is None or term.op != "ret":
        return None
    if len(ins) >= 2 and _self_call(fn, ins[-2]):
        call = ins[-2]
        if (term.operands == [call]) or (not term.operands and fn.ret == VOID):
            return call, None
    if len(ins) >= 3 and _self_call(fn, ins[-3]):
        call, op = ins[-3], ins[-2]
        if op.op in ACCUMULATE and op.type.is_int and op.type == fn.ret \
                and term.operands == [op] and len(op.operands) == 2 \
                and [o is call for o in op.operands].count(True) == 1:
            return call, op
    return None


def _self_call(fn: Function, ins: Instr) -> bool:
    return ins.op == "call" and ins.operands and ins.operands[0] is fn


def run(fn: Function, analyses) -> bool:
    if analyses.gpu or fn.is_kernel or not fn.blocks:
        return False
    sites = []
    for b in fn.blocks:
        if b.instrs and b.instrs[-1].op == "ret":
            s = _site(fn, b)
            if s is not None:
                sites.append((b, *s))
    if not sites:
        return False
    if any(i.op in _FRAME for b in fn.blocks for i in b.instrs):
        analyses.remark(sites[0][1].span, NAME, "tail self-call kept: the function has "
                        "frame slots a callee may still be reading")
        return False
    if any(not loc.type.is_scalar for loc in fn.locals) or \
            any(not p.type.is_scalar for p in fn.params):
        analyses.remark(sites[0][1].span, NAME, "tail self-call kept: the function has "
                        "aggregate locals or parameters")
        return False
    accum = next((op.op for _, _, op in sites if op is not None), None)
    sites = [s for s in sites if s[2] is None or s[2].op == accum]
    _rewrite(fn, sites, accum, analyses)
    return True


def _rewrite(fn: Function, sites: list, accum: str | None, analyses) -> None:
    header = fn.blocks[0]
    own = list(fn.locals)                  # cleared at each site: a call's slots start at 0
    entry = Block(fresh_block_name(fn, "tre.entry"), function=fn)
    slots = [Local(p.type, f"tre.{p.name}") for p in fn.params]
    fn.locals.extend(slots)
    reads = {p: make_instr("local.get", p.type, [s], {}, [], fn.span, header)
             for p, s in zip(fn.params, slots)}
    for b in fn.blocks:                     # the body reads the parameters' slots
        for ins in b.instrs:
            ops = ins.operands
            for k, o in enumerate(ops):
                if o.__class__ is Param and o in reads:
                    ops[k] = reads[o]
    header.instrs[0:0] = list(reads.values())
    for p, s in zip(fn.params, slots):
        entry.append(make_instr("local.set", VOID, [s, p], {}, [], fn.span))
    acc = None
    if accum is not None:
        acc = Local(fn.ret, "tre.acc")
        fn.locals.append(acc)
        entry.append(make_instr("local.set", VOID, [acc, _identity(accum, fn.ret)], {}, [],
                           fn.span))
    entry.append(make_instr("br", VOID, [], {}, [header], fn.span))
    site_blocks = {b for b, _, _ in sites}
    for b, call, op in sites:
        span = call.span
        del b.instrs[-3 if op is not None else -2:]
        if op is not None:
            x = op.operands[1] if op.operands[0] is call else op.operands[0]
            a = b.append(make_instr("local.get", fn.ret, [acc], {}, [], span))
            s = b.append(make_instr(accum, fn.ret, [a, x], {}, [], span))
            b.append(make_instr("local.set", VOID, [acc, s], {}, [], span))
        for slot, arg in zip(slots, call.operands[1:]):
            b.append(make_instr("local.set", VOID, [slot, arg], {}, [], span))
        for loc in own:
            b.append(make_instr("local.set", VOID, [loc, zero(loc.type)], {}, [], span))
        b.append(make_instr("br", VOID, [], {}, [header], span))
        analyses.remark(span, NAME, f"tail call to {fn.name} became a loop" +
                        (f" (accumulator recursion: {accum})" if op is not None else ""))
    if acc is not None:                     # every remaining return folds the accumulator
        for b in fn.blocks:
            term = b.instrs[-1] if b.instrs else None
            if b in site_blocks or term is None or term.op != "ret":
                continue
            a = make_instr("local.get", fn.ret, [acc], {}, [], term.span, b)
            r = make_instr(accum, fn.ret, [a, term.operands[0]], {}, [], term.span, b)
            b.instrs[-1:-1] = [a, r]
            term.operands = [r]
    fn.blocks.insert(0, entry)
