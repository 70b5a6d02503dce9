"""The asynchronous-copy group verifier (gpu.md "Target-neutral asynchronous staging").

State at each program point: (open, pending) = whether copies were issued since the last
commit, and how many committed groups may still be outstanding. `async.copy` opens a group,
`async.commit` closes it (pending + 1, at most 7 outstanding), `async.wait n` leaves at most
n. Every path must agree on the state where it joins (loops included), and every function
exit must have no open and no pending group. Errors: E0420 unbalanced exit, E0421 more than
7 pending groups, E0422 paths disagree, E0423 wait count outside 0..7, E0424 a constant span
that is not a multiple of the transaction size.
"""
from __future__ import annotations

from ..diagnostics import DiagnosticBag
from .cfg import reverse_postorder
from .module import Const, Function

MAX_PENDING = 7


def _transfer(ins, state: tuple[bool, int], bag: DiagnosticBag, fn: Function):
    is_open, pending = state
    if ins.op == "async.copy":
        count = ins.operands[2]
        if isinstance(count, Const):
            span_bytes = count.value * ins.operands[0].type.pointee.size
            if span_bytes <= 0 or span_bytes % ins.attrs["transaction"]:
                bag.error("E0424", f"async copy of {span_bytes} bytes is not a positive "
                          f"multiple of the {ins.attrs['transaction']}-byte transaction",
                          ins.span)
        return True, pending
    if ins.op == "async.commit":
        if pending + 1 > MAX_PENDING:
            bag.error("E0421", f"more than {MAX_PENDING} committed async groups pending in "
                      f"`{fn.name}`", ins.span, help="wait before committing another group")
        return False, min(pending + 1, MAX_PENDING)
    if ins.op == "async.wait":
        n = ins.attrs["pending"]
        if not 0 <= n <= MAX_PENDING:
            bag.error("E0423", f"async_copy_wait({n}): the count must be in 0..7", ins.span)
            return is_open, pending
        return is_open, min(pending, n)
    return state


def verify_function_groups(fn: Function, bag: DiagnosticBag) -> None:
    if not any(i.op.startswith("async.") for i in fn.instructions()):
        return
    entry_state: dict[int, tuple[bool, int]] = {id(fn.blocks[0]): (False, 0)}
    # per block entry, the source span of the last async operation on the path there: a
    # report without a span of its own (an implicit return, a join) points at it
    entry_where: dict[int, object] = {id(fn.blocks[0]): fn.span}
    reported: set[int] = set()
    for blk in reverse_postorder(fn):
        if id(blk) not in entry_state:
            continue                  # reached only through a back edge from a later block
        state, where = entry_state[id(blk)], entry_where[id(blk)]
        for ins in blk.instrs:
            state = _transfer(ins, state, bag, fn)
            if ins.op.startswith("async.") and ins.span is not None:
                where = ins.span
            if ins.op == "ret" and state != (False, 0):
                what = "an uncommitted copy group" if state[0] else \
                    f"{state[1]} committed group(s) not waited for"
                last = "copied" if state[0] else "committed"
                bag.error("E0420", f"`{fn.name}` can exit with {what}"
                          + ("" if ins.span else f" (last {last} here)"), ins.span or where,
                          help="commit every copy and async_copy_wait(0) before returning")
        for succ in blk.successors:
            seen = entry_state.setdefault(id(succ), state)
            entry_where.setdefault(id(succ), where)
            if seen != state and id(succ) not in reported:
                reported.add(id(succ))
                bag.error("E0422", f"async copy groups differ between paths that join "
                          f"after this point in `{fn.name}` ({_fmt(seen)} on one, "
                          f"{_fmt(state)} on the other)", where,
                          help="make every path copy, commit and wait alike")


def balance_groups(fn: Function, make_wait) -> int:
    """Make every join agree on the pending count by waiting more on the busier paths: for
    copy groups the compiler owns (tile loads), where a path that issued a load nothing
    has waited for yet (a prefetch a loop never reads, say) meets one that has not. Each
    fix is `make_wait(block, n)`: an `async.wait n` appended before `block`'s terminator,
    with n the smaller count; waiting more is always correct, and every fix lowers a
    block's outgoing count, so this ends. Returns the number of waits added."""
    added, ignored = 0, DiagnosticBag()     # (the verifier reports any errors later)
    while True:
        order = reverse_postorder(fn)
        entry, out = {id(fn.blocks[0]): 0}, {}
        for blk in order:
            if id(blk) not in entry:
                continue
            pending = entry[id(blk)]
            for ins in blk.instrs:
                pending = _transfer(ins, (False, pending), ignored, fn)[1]
            out[id(blk)] = pending
            for succ in blk.successors:
                entry.setdefault(id(succ), pending)
        edges = [(blk, succ) for blk in order if id(blk) in out for succ in blk.successors]
        bad = next(((b, s) for b, s in edges if out[id(b)] != entry[id(s)]), None)
        if bad is None:
            return added
        low = min(out[id(bad[0])], entry[id(bad[1])])
        for pred, succ in edges:        # every path into that join comes down to `low`
            if succ is bad[1] and out[id(pred)] > low:
                make_wait(pred, low)
                added += 1


def _fmt(state: tuple[bool, int]) -> str:
    return f"{'open, ' if state[0] else ''}{state[1]} pending"


def verify_async_groups(functions: list[Function]) -> None:
    bag = DiagnosticBag()
    for fn in functions:
        verify_function_groups(fn, bag)
    bag.raise_if_errors()
