"""Small CFG edits shared by passes (no pass calls another pass; they share these),
`make_instr`, the one way a pass creates an instruction, and `retarget_op`, the one way it
changes an instruction's op (tests/test_repo_layout.py holds passes to both: no pass
constructs `Instr` or assigns `.op` itself)."""
from __future__ import annotations

from ..ir.cfg import remove_phi_arm, remove_unreachable   # (re-exported: passes' edits)
from ..ir.module import Block, Const, Function, Instr, UseMap, replace_all_uses_with
from ..ir.ops import OPS
from ..ir.ssa_builder import zero      # (re-exported: what an unwritten promoted local reads)
from .op_facts import PURE


def make_instr(op: str, type_, operands: list, attrs: dict, targets: list, span=None,
               block: Block | None = None) -> Instr:
    """A new instruction (not yet in a block's list: the caller places it; `block` is the
    block it will sit in). The lists and dict are taken as given, not copied. The op must
    be one of the IR's (ir/ops.py), as the builder checks."""
    if op not in OPS:
        raise ValueError(f"make_instr: unknown op {op}")
    return Instr(op, type_, operands, attrs, targets, span, block)


def retarget_op(ins: Instr, op: str, operands: list) -> None:
    """Make `ins`, in place, an `op` of `operands` (same type, attributes and place; its
    users keep reading it): the one way a pass changes what an instruction computes
    (tests/test_repo_layout.py). The op is checked as `make_instr` checks it."""
    if op not in OPS:
        raise ValueError(f"retarget_op: unknown op {op}")
    ins.op = op
    ins.operands = operands


def has_op(fn: Function, op: str) -> bool:
    """Whether some instruction of `fn` is an `op` (plain loops: a pass's cheap exit, about
    six times faster than `any()` over `fn.instructions()`)."""
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.op == op:
                return True
    return False


def fresh_block_name(fn: Function, stem: str, used: set | None = None) -> str:
    """`stem`, or `stem.N` with the first N no block of `fn` is named (`used`: those
    names, when the caller keeps them)."""
    if used is None:
        used = {b.name for b in fn.blocks}
    out, n = stem, 1
    while out in used:
        out, n = f"{stem}.{n}", n + 1
    return out


def speculation_safe(ins: Instr) -> bool:
    """Whether `ins` may run where its block would not have: a pure op, except an integer
    div/rem whose divisor may be zero or -1 (they trap on x86-64)."""
    if ins.op in ("div", "rem") and ins.type.is_int:
        d = ins.operands[1]
        return isinstance(d, Const) and d.value not in (0, -1)
    return ins.op in PURE


def publication_barrier(ins: Instr) -> bool:
    """An acq-rel/seq-cst workgroup barrier: what publishes staged workgroup data."""
    return ins.op == "gpu.barrier" and ins.attrs.get("order") in ("acq_rel", "seq_cst") \
        and "workgroup" in ins.attrs.get("regions", ())


def redirect(term: Instr, old: Block, new: Block) -> None:
    term.targets = [new if t is old else t for t in term.targets]


def replace_uses(fn: Function, old, new, uses: UseMap | None) -> None:
    if uses is not None:
        uses.replace_all(old, new)
    else:
        replace_all_uses_with(fn, old, new)
