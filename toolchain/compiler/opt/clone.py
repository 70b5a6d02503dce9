"""Copying IR blocks with a value map: the shared mechanism of unrolling and inlining.

`clone_blocks` copies `blocks` into new blocks named `<name><suffix>`. Operands found in
`vmap` are replaced (callers seed it, e.g. header phis -> their incoming values, or callee
params -> call arguments); instructions of the copied blocks map to their copies; branch
targets and phi predecessors among the copied blocks map to the copied blocks, others are
kept. Instructions listed in `skip` are not copied (their uses must be mapped in `vmap`).
"""
from __future__ import annotations

from ..ir.module import Block, Instr
from .edit import make_instr


def clone_blocks(fn, blocks: list[Block], vmap: dict, suffix: str,
                 skip: frozenset = frozenset(), used: set | None = None
                 ) -> tuple[list[Block], dict]:
    """`used`: the block names of `fn`, when the caller keeps that set (it gains the
    copies' names); by default it is collected here."""
    if used is None:
        used = {b.name for b in fn.blocks}
    bmap: dict[Block, Block] = {}
    for b in blocks:
        name, n = f"{b.name}{suffix}", 1
        while name in used:
            name, n = f"{b.name}{suffix}.{n}", n + 1
        used.add(name)
        bmap[b] = Block(name, function=fn)
    pending: list[Instr] = []
    add = pending.append            # (locals: this loop runs per instruction per copy)
    bget = bmap.get
    for b in blocks:
        nb = bmap[b]
        out = nb.instrs
        for ins in b.instrs:
            if skip and ins in skip:
                continue
            attrs, targets = ins.attrs, ins.targets
            c = make_instr(ins.op, ins.type, list(ins.operands), attrs.copy() if attrs else {},
                      [bget(t, t) for t in targets] if targets else [], ins.span, nb)
            out.append(c)
            vmap[ins] = c
            add(c)
    remap(pending, vmap)              # after every copy exists: forward references (phis)
    return [bmap[b] for b in blocks], bmap


def remap(instrs: list[Instr], vmap: dict) -> None:
    """Replace the operands of `instrs` (copies: their own operand lists) found in `vmap`."""
    get = vmap.get
    for c in instrs:
        ops = c.operands
        for k, o in enumerate(ops):
            try:
                r = get(o, _NONE)
            except TypeError:         # an unhashable operand is never mapped
                continue
            if r is not _NONE:
                ops[k] = r


_NONE = object()
