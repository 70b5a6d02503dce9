"""subgroup-width: make `subgroup_size()` a constant where the target and launch allow it.

The target tells the optimizer its native subgroup width W (PTX: 32; SPIR-V: unknown, so
this pass does nothing there). `subgroup_size()` is the number of live lanes of the
caller's subgroup: W, except in the last subgroup of a workgroup whose size is not a
multiple of W.

- Fold: when every kernel that can reach the function declares a block whose volume is a
  multiple of W (`kernel(block = N)`), every subgroup is full, so each `subgroup.size`
  becomes the constant W: loops striding by it get a constant step (ptxas unrolls them,
  and the counted-loop passes see them).
- Version: otherwise, when a loop's step depends on `subgroup.size`, the function body is
  duplicated behind one test at entry, `subgroup_size() == W`: the fast copy has the
  constant, the original keeps the exact partial-subgroup semantics. The test is uniform
  in the subgroup, so every collective stays under uniform control. Static allocations
  (workgroup and private arrays) are shared by the two copies.
"""
from __future__ import annotations

from ..ir.launch import partial_subgroup_reach
from ..ir.module import Block, Const, Instr
from ..ir.types import BOOL, U32, VOID
from .clone import clone_blocks
from .edit import fresh_block_name, has_op, make_instr

NAME = "subgroup-width"
_STATIC = ("alloca", "gpu.alloc")


def _partial_reach(module, width: int) -> set:
    """Functions reachable from a kernel whose launch may leave a subgroup partial (the
    shared analysis of ir/launch.py, computed once per module and width: the pass runs
    once per function)."""
    cache = module.__dict__.setdefault("_partial_subgroup_reach", {})
    if width not in cache:
        cache[width] = partial_subgroup_reach(module.kernels(), width)
    return cache[width]


def _strides_by_size(fn, analyses) -> bool:
    """Whether some loop header phi is updated by a value computed from subgroup.size."""
    sizes = {i for i in fn.instructions() if i.op == "subgroup.size"}
    derived = set(sizes)
    changed = True
    while changed:                       # values computed (purely) from the size
        changed = False
        for ins in fn.instructions():
            if ins not in derived and ins.op in ("convert", "mul", "shl", "add") and \
                    any(o in derived for o in ins.operands) and \
                    all(o in derived or isinstance(o, Const) for o in ins.operands):
                derived.add(ins)
                changed = True
    for lp in analyses.get("loops").loops:
        for phi in lp.header.phis:
            for v in phi.operands:
                if isinstance(v, Instr) and v.op in ("add", "sub") and \
                        any(o in derived for o in v.operands):
                    return True
    return False


def _fold(blocks, width: int) -> int:
    """Replace each subgroup.size in `blocks` by the constant `width` (every use of one is
    in the same blocks: the function, or the versioned copy); returns how many."""
    sizes = {i: Const(i.type, width) for b in blocks for i in b.instrs
             if i.op == "subgroup.size"}
    for b in blocks:
        b.instrs = [i for i in b.instrs if i not in sizes]
        for ins in b.instrs:
            if any(o in sizes for o in ins.operands):
                ins.operands = [sizes.get(o, o) for o in ins.operands]
    return len(sizes)


def _version(fn, width: int) -> None:
    entry = fn.blocks[0]
    statics = [i for i in entry.instrs if i.op in _STATIC]
    vmap = {s: s for s in statics}
    copies, _ = clone_blocks(fn, fn.blocks, vmap, ".w32", skip=frozenset(statics))
    _fold(copies, width)
    head = Block(fresh_block_name(fn, "entry.width"), function=fn)
    for s in statics:
        entry.instrs.remove(s)
        s.block = head
        head.instrs.append(s)
    size = make_instr("subgroup.size", U32, [], {}, [], None, head)
    full = make_instr("cmp", BOOL, [size, Const(U32, width)], {"pred": "eq"}, [], None, head)
    head.instrs += [size, full, make_instr("cbr", VOID, [full], {}, [copies[0], entry], None, head)]
    fn.blocks[:] = [head] + copies + fn.blocks


def run(fn, analyses) -> bool:
    width = analyses.target.subgroup_width
    if not width or not analyses.gpu or analyses.module is None:
        return False
    if fn.attrs.get("subgroup_versioned") or not has_op(fn, "subgroup.size"):
        return False
    if fn not in _partial_reach(analyses.module, width):
        n = _fold(fn.blocks, width)
        analyses.remark(fn.span, NAME, f"subgroup_size() is the constant {width} ({n} use(s)):"
                        f" every launch that reaches this function runs whole {width}-lane "
                        "subgroups (declared block volume a multiple of it)")
        return True
    if not _strides_by_size(fn, analyses):
        return False
    _version(fn, width)
    fn.attrs["subgroup_versioned"] = True
    analyses.remark(fn.span, NAME, f"versioned on subgroup_size() == {width}: a loop strides "
                    "by the subgroup size and the launch may leave a subgroup partial; the "
                    f"{width}-lane copy has a constant stride, the other keeps exact semantics")
    return True
