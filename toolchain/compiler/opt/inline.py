"""inline: replace calls of small internal functions by a copy of their body.

Runs first in the pipeline. Callees were optimized before their callers (the manager
orders functions callees-first). On the host they are back in slot form, as the caller
still is, so a copy is plain: the callee's locals become fresh caller locals, its
parameters map to the call's arguments, every `ret v` becomes `local.set $ret, v; br
after`, and the call's result is a `local.get $ret` at the head of the block that continues
after the call; mem2reg then promotes all of it. A callee without scalar slots returns
through a phi instead: every `ret v` becomes `br after` and the call becomes the phi of the
returned values, in place. That is every callee on the GPU under -O, where caller and
callee are in SSA form (out-of-SSA waits for the whole module), and any host callee that
never had a slot.

A callee is inlined when it is defined here, not a kernel, not (mutually) recursive, takes
and returns only scalars and pointers, and is small (at most SIZE instructions) or called
from exactly one place. Static allocations of the copy (alloca, gpu.alloc) move to the
caller's entry block, where the backends expect frame slots. Each inlined call is a remark.
"""
from __future__ import annotations

from ..ir.cfg import successors
from ..ir.module import Block, Function, Instr, Local
from ..ir.types import VOID
from .clone import clone_blocks, remap
from .edit import fresh_block_name, make_instr

NAME = "inline"
SIZE = 48
_KNOWN = "calls"          # the cache's entry for the manager's call lists (not a Function)
_STATIC = ("alloca", "gpu.alloc")


def _size(fn: Function) -> int:
    return sum(len(b.instrs) for b in fn.blocks)


def _callees(f: Function, cache: dict) -> list:
    """The functions `f` calls, one entry per call. `cache` holds the lists of functions
    other than the one being optimized (the manager drops an entry when its function's
    pipeline has run: only that function changes meanwhile)."""
    got = cache.get(f)
    if got is None:
        known = cache.get(_KNOWN, {}).get(f)        # the manager's walk (f unchanged)
        got = cache[f] = [i.operands[0] for i in known] if known is not None else \
            [i.operands[0] for b in f.blocks for i in b.instrs
             if i.op == "call" and isinstance(i.operands[0], Function)]
    return got


def _reaches(callee: Function, target: Function, cache: dict) -> bool:
    seen, stack = set(), [callee]
    while stack:
        f = stack.pop()
        if f is target:
            return True
        if f in seen:
            continue
        seen.add(f)
        stack.extend(_callees(f, cache))
    return False


def _call_sites(module, fn: Function, callees: list, cache: dict) -> dict:
    """Calls per function in the module (`callees`: those of `fn`, one entry per call)."""
    count: dict = {}
    for f in module.functions.values():
        for c in (callees if f is fn else _callees(f, cache)):
            count[c] = count.get(c, 0) + 1
    return count


def _eligible(caller: Function, callee: Function, size: int, sites, cache: dict,
              aggregates: bool = False) -> bool:
    """`size`: the callee's; `sites(callee)`: its number of call sites (asked only of a
    callee over SIZE). `aggregates`: struct/array parameters and results are fine (device
    code: the PTX and SPIR-V back ends hold aggregate values, phis and slots included;
    the host back ends are not asked to)."""
    if callee.is_extern or callee.is_kernel or not callee.blocks or callee is caller:
        return False
    if not aggregates:
        if any(not (p.type.is_scalar or p.type.is_ptr) for p in callee.params):
            return False
        if callee.ret != VOID and not (callee.ret.is_scalar or callee.ret.is_ptr):
            return False
    if _reaches(callee, caller, cache):
        return False
    return size <= SIZE or sites(callee) == 1


class _Edits:
    """What a run's inlines leave for the end (compile time: one step, not one per call):
    the (block, continuation) splits in order (phi predecessors move), and the caller's
    block names. A call's users need no rewrite: the call becomes its result in place."""

    def __init__(self, fn: Function):
        self.moved: list = []
        self.fn = fn
        self._used: set | None = None

    @property
    def used(self) -> set:
        """The caller's block names, gathered when a copy first needs one (compile time: a
        spliced one-block callee adds no block, and most runs splice only)."""
        if self._used is None:
            self._used = {b.name for b in self.fn.blocks}
        return self._used

    def apply(self, fn: Function) -> None:
        """Phis naming a split block as predecessor name its last continuation instead;
        they are in the successors of the continuations (which took the terminators)."""
        heads = dict.fromkeys(s for _, new in self.moved for s in successors(new))
        for s in heads:
            for phi in s.phis:
                phi.targets = [self._last(t) for t in phi.targets]

    def _last(self, t: Block) -> Block:
        for old, new in self.moved:
            if t is old:
                t = new
        return t


def inline_call(fn: Function, call: Instr, edits: _Edits | None = None) -> None:
    """Inline one call; the call itself becomes its result (the `local.get` of a result
    slot, the phi of the returned values, or a one-block callee's result instruction; a
    void call goes). With `edits` (a run inlining several), the successors' phis wait for
    `edits.apply`."""
    callee: Function = call.operands[0]
    block = call.block
    at = block.instrs.index(call)
    if _splice(call, callee, block, at):
        return
    own = edits is None
    if own:
        edits = _Edits(fn)
    after = Block(fresh_block_name(fn, f"{block.name}.after.{callee.name}", edits.used),
                  function=fn)
    for ins in block.instrs[at + 1:]:
        ins.block = after
        after.instrs.append(ins)
    del block.instrs[at:]
    vmap: dict = dict(zip(callee.params, call.operands[1:]))
    for loc in callee.locals:
        new = Local(loc.type, f"{callee.name}.{loc.name}")
        fn.locals.append(new)
        vmap[loc] = new
    returns = callee.ret is not VOID and callee.ret != VOID
    # SSA callee (no scalar slots: GPU -O, where out-of-SSA waits for the whole module):
    # the call becomes the phi of the returned values. A slot-form callee returns through
    # a slot, which mem2reg promotes with the caller's.
    ssa = not any(l.type.is_scalar for l in callee.locals)
    ret_values: list = []
    ret_blocks: list = []
    ret_slot = None
    if returns and not ssa:
        ret_slot = Local(callee.ret, f"{callee.name}.ret")
        fn.locals.append(ret_slot)
    copies, _ = clone_blocks(fn, callee.blocks, vmap, f".{callee.name}", used=edits.used)
    edits.used.add(after.name)
    entry = fn.blocks[0]
    for b in copies:
        for ins in list(b.instrs):
            if ins.op in _STATIC:            # frame slots live in the entry block
                b.instrs.remove(ins)
                ins.block = entry
                entry.instrs.insert(0, ins)
        term = b.instrs[-1]
        if term.op == "ret":
            b.instrs.pop()
            if ret_slot is not None:
                b.instrs.append(make_instr("local.set", VOID, [ret_slot, term.operands[0]], {}, [],
                                      term.span, b))
            elif returns:
                ret_values.append(term.operands[0])
                ret_blocks.append(b)
            b.instrs.append(make_instr("br", VOID, [], {}, [after], term.span, b))
    block.instrs.append(make_instr("br", VOID, [], {}, [copies[0]], call.span, block))
    if returns:     # the call becomes the get of its result slot, or the phi of the
        # returned values, in place (same object: its users read the result)
        if ret_slot is not None:
            call.op, call.operands, call.targets = "local.get", [ret_slot], []
        else:
            call.op, call.operands, call.targets = "phi", ret_values, ret_blocks
        call.type, call.attrs, call.block = callee.ret, {}, after
        after.instrs.insert(0, call)
    pos = fn.blocks.index(block) + 1
    fn.blocks[pos:pos] = copies + [after]
    edits.moved.append((block, after))     # the successors' phis now come from `after`
    if own:
        edits.apply(fn)


def _splice(call: Instr, callee: Function, block: Block, at: int) -> bool:
    """A one-block callee without slots or frame allocations, whose result (if any) it
    computes itself: its instructions go in place of the call, and the call becomes the
    copy of the one computing the result (same object: its users read it). No blocks are
    split, so simplify-cfg has nothing to merge. False when the callee is not that shape."""
    if len(callee.blocks) != 1 or callee.locals:
        return False
    body = callee.blocks[0].instrs
    if body[-1].op != "ret":
        return False
    rv = body[-1].operands[0] if body[-1].operands else None
    if rv is not None and rv.__class__ is not Instr:
        return False                # a parameter or constant: nothing to become
    for ins in body:
        if ins.op in _STATIC:
            return False
    vmap: dict = dict(zip(callee.params, call.operands[1:]))
    new = []
    for ins in body[:-1]:
        if ins is rv:
            c = call
            c.op, c.type, c.operands, c.targets, c.span = \
                ins.op, ins.type, list(ins.operands), [], ins.span
            c.attrs = ins.attrs.copy() if ins.attrs else {}
        else:
            c = make_instr(ins.op, ins.type, list(ins.operands),
                      ins.attrs.copy() if ins.attrs else {}, [], ins.span, block)
        vmap[ins] = c
        new.append(c)
    remap(new, vmap)
    block.instrs[at:at + 1] = new
    return True


def _calls(fn: Function) -> list[Instr]:
    """The direct calls in `fn`, in block order."""
    return [i for b in fn.blocks for i in b.instrs
            if i.op == "call" and isinstance(i.operands[0], Function)]


def run(fn, analyses) -> bool:
    known = analyses.shared.get("calls", {})   # the manager's call-graph walk
    calls = list(known[fn]) if analyses.edits == 0 and fn in known else _calls(fn)
    if not calls:
        return False                          # compile time: no module scan without calls
    cache = analyses.shared.setdefault(NAME, {})
    cache.pop(fn, None)                       # fn is the one function changing now
    cache[_KNOWN] = known
    callees = [c.operands[0] for c in calls]  # (as the run starts: inlined calls change)
    counted: list = []

    def sites(callee) -> int:                 # the module scan, only if a callee needs it
        if not counted:
            counted.append(_call_sites(analyses.module, fn, callees, cache)
                           if analyses.module is not None else {})
        return counted[0].get(callee, 0)

    # callee -> its size if eligible, else None: decided once per run (only fn changes)
    verdict: dict = {}
    edits = _Edits(fn)
    changed = False
    for _ in range(4):                        # a copy may expose its callee's calls: bounded
        todo = []
        for call in calls:
            callee = call.operands[0]
            if callee not in verdict:
                size = _size(callee)
                verdict[callee] = size if _eligible(fn, callee, size, sites, cache,
                                                    analyses.gpu) else None
            if verdict[callee] is not None:
                todo.append(call)
        if not todo:
            break
        inlined = []
        for call in todo:
            callee = call.operands[0]
            size = verdict[callee]
            span = call.span
            inline_call(fn, call, edits)
            inlined.append(callee)
            why = "small" if size <= SIZE else "its only call site"
            analyses.remark(span, NAME, f"inlined call to {callee.name} "
                                        f"({size} instructions, {why})")
        changed = True
        if not any(_callees(callee, cache) for callee in inlined):
            break       # the copies hold no calls: what is left was refused above
        calls = _calls(fn)
    if changed:
        edits.apply(fn)
    return changed
