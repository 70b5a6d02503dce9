"""Launch facts shared by the optimizer and the backends (one analysis, so a backend never
re-derives what the optimizer decided): which functions may run in a partial subgroup.

A subgroup of width W is full in a kernel whose declared block volume is a multiple of W;
a kernel without a declared block, or with another volume, may leave its last subgroup
partial, and so may every function it reaches through direct calls. opt/subgroup_width.py
folds `subgroup_size()` to W where no partial subgroup reaches; the PTX backend's
`full_subgroups` answers the same question for its lowering of `subgroup_size()`.
"""
from __future__ import annotations

from .module import Function


def full_block(k: Function, width: int) -> bool:
    """Whether kernel `k` declares a block whose volume is a multiple of `width`."""
    shape = k.block_shape
    return bool(shape) and (shape[0] * shape[1] * shape[2]) % width == 0


def partial_subgroup_reach(kernels, width: int) -> set[Function]:
    """The functions reachable from a kernel of `kernels` whose launch may leave a
    subgroup of `width` lanes partial (the kernels themselves included)."""
    reach: set[Function] = set()
    stack = [k for k in kernels if not full_block(k, width)]
    while stack:
        fn = stack.pop()
        if fn in reach:
            continue
        reach.add(fn)
        stack.extend(i.operands[0] for i in fn.instructions()
                     if i.op == "call" and isinstance(i.operands[0], Function))
    return reach
