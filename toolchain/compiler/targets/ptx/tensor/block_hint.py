"""How many subgroups a kernel without a declared block shape expects per workgroup.

A plain-source kernel that gives each subgroup its own tile numbers the subgroups itself:
`block.x * C + thread.x / 32` (or `thread.x >> 5`) covers the tiles exactly when the
launch's workgroup has C subgroups along x. That index is the only thing the compiler can
know about an undeclared block, and it is a hint, never a promise:
staging.py sizes its shared-memory areas for C subgroups and still tests every launch at
run time (a subgroup past the areas loads directly), so a wrong hint costs speed, not bits.
"""
from __future__ import annotations

from ....ir.module import Instr, const_int

WIDTH = 32                       # the PTX subgroup
MAX_SUBGROUPS = 1024 // WIDTH    # a workgroup holds at most 1024 work-items


def subgroups_hint(fn) -> int | None:
    """C of the kernel's subgroup index `block.x * C + thread.x / 32` (the largest, if it
    has several), else None."""
    found = [c for i in fn.instructions() if i.op == "add"
             for c in (_block_term(i.operands[0], i.operands[1]),
                       _block_term(i.operands[1], i.operands[0])) if c]
    found = [c for c in found if 1 <= c <= MAX_SUBGROUPS]
    return max(found) if found else None


def _strip(v):
    """The value under width-preserving converts (the index is small and non-negative)."""
    while isinstance(v, Instr) and v.op == "convert" and len(v.operands) == 1:
        v = v.operands[0]
    return v


def _index(v, kind: str) -> bool:
    v = _strip(v)
    return isinstance(v, Instr) and v.op == "gpu.index" and v.attrs.get("kind") == kind \
        and v.attrs.get("axis") == "x"


def _scaled_block(v) -> int | None:
    """s when `v` is block.x * s (or s * block.x, block.x << log2 s)."""
    v = _strip(v)
    if not isinstance(v, Instr) or len(v.operands) != 2:
        return None
    a, b = v.operands
    if v.op == "mul":
        for x, y in ((a, b), (b, a)):
            if _index(x, "block") and const_int(y):
                return const_int(y)
    shift = const_int(b)
    if v.op == "shl" and _index(a, "block") and shift is not None and 0 <= shift < 31:
        return 1 << shift
    return None


def _per_subgroup(v) -> bool:
    """Whether `v` is x / 32 or x >> 5 (of anything)."""
    v = _strip(v)
    return isinstance(v, Instr) and len(v.operands) == 2 and (
        (v.op == "div" and const_int(v.operands[1]) == WIDTH) or
        (v.op == "shr" and const_int(v.operands[1]) == WIDTH.bit_length() - 1))


def _block_term(scaled, sub) -> int | None:
    """C when `scaled` is block.x * C and `sub` is thread.x / 32."""
    if not _per_subgroup(sub) or not _index(_strip(sub).operands[0], "thread"):
        return None
    return _scaled_block(scaled)

