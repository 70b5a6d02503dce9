"""index-scale: one shared `index * size` for array accesses that use the same index.

`a[i]`, `b[i]` and `c[i]` over one element size are three `ptradd`s that each multiply i by
the size. When two or more `ptradd`s with the same (non-constant) index value (or widenings of one
value) step over
elements of the same size (> 1 byte), the multiply becomes one IR value,
`%o = mul i64 %i, size`, placed in the nearest block dominating all of them (before the
first of them there), and each `ptradd p, %i` becomes `byteadd p, %o`. This is the address
CSE the PTX backend used to do privately per block; as a pass both GPU targets and
`--dump-ir` see it, and it reaches across blocks (the dominator tree, not one block). Host
code is left alone: x86-64 and arm64 fold the scale into their addressing mode
(`[base + index*scale]`), so one shared multiply would only add instructions there.

A lone `ptradd` stays as it is (nothing to share; backends fold its scale into their
addressing: PTX `mul.wide`, x86-64 `imul`). Runs late, after the passes that recognise
`ptradd` address shapes (iv-reduce, unroll-runtime, load-combine). Pure rewrite: the sum
is the same 64-bit wrapping value either way.
"""
from __future__ import annotations

from ..ir.cfg import successors
from ..ir.module import Const, Instr, Param
from ..ir.types import I64
from .edit import make_instr, retarget_op

NAME = "index-scale"


def run(fn, analyses) -> bool:
    if not analyses.gpu:
        return False                     # host: [base + index*scale] folds the multiply
    groups: dict = {}
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.op != "ptradd":
                continue
            idx = ins.operands[1]
            size = ins.operands[0].type.pointee.size
            if size > 1 and isinstance(idx, (Instr, Param)):
                groups.setdefault((_source(idx), size), []).append(ins)
    todo = [(k, us) for k, us in groups.items() if len(us) > 1]
    if not todo:
        return False
    dom = reachable = None
    shared = addresses = 0
    for (_, size), users in todo:
        home = users[0].block
        if any(u.block is not home for u in users):
            reachable = reachable or _reach(fn.blocks[0], None)
            if not _dominates_all(fn, home, users, reachable):   # (else home is the answer)
                dom = dom or analyses.get("domtree")
                users = [u for u in users if dom.reachable(u.block)]
                if len(users) < 2:
                    continue
                home = users[0].block
                for u in users[1:]:
                    while not dom.dominates(home, u.block):
                        home = dom.idom[home]
        mine = set(users)
        first = next((u for u in home.instrs if u in mine), home.terminator)
        idx = users[0].operands[1]
        if any(u.operands[1] is not idx for u in users):   # equal widenings of one value
            idx = home.insert_before(first, make_instr("convert", I64, [idx.operands[0]], {}, [],
                                                  users[0].span))
        scaled = home.insert_before(first, make_instr("mul", I64, [idx, Const(I64, size)], {}, [],
                                                 users[0].span))
        for u in users:
            retarget_op(u, "byteadd", [u.operands[0], scaled])
        shared += 1
        addresses += len(users)
    if shared:
        analyses.remark(fn.span, NAME, f"{addresses} array addresses share {shared} scaled "
                        f"index{'es' if shared != 1 else ''}")
        analyses.keep_fixpoint("simplify-cfg")     # address arithmetic only: no CFG edit
    return bool(shared)


def _source(idx):
    """The grouping key of an index: a widening `convert` counts as its source (passes that
    build addresses late, like iv-reduce, widen one value more than once)."""
    if isinstance(idx, Instr) and idx.op == "convert":
        return ("widen", idx.operands[0])
    return idx


def _dominates_all(fn, home, users, reachable: set) -> bool:
    """Whether `home` (reachable) dominates the blocks of `users`, all reachable: then it is
    their nearest common dominator, found by one walk that avoids `home` instead of a
    dominator tree (compile time: the tree is built only when this says no)."""
    if home not in reachable:
        return False
    around = _reach(fn.blocks[0], home) if home is not fn.blocks[0] else ()
    for u in users:
        b = u.block
        if b is not home and (b not in reachable or b in around):
            return False
    return True


def _reach(start, avoid) -> set:
    """The blocks reached from `start` on paths that do not enter `avoid`."""
    seen = {start}
    stack = [start]
    while stack:
        for s in successors(stack.pop()):
            if s not in seen and s is not avoid:
                seen.add(s)
                stack.append(s)
    return seen
