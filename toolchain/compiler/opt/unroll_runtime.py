"""unroll-runtime: counted loops with a run-time trip count run U iterations per test.

`for (i = a; i < n; i += s)` with a constant step s > 0 (or `i > n` with s < 0), an
invariant bound, one latch and its only exit at the header test becomes

    main:  while (wide(i) + (U-1)*s < wide(n)) { body(i); body(i+s); ... U copies }
    rest:  the original loop, entered with the values the main loop ends with

where `wide` extends the (at most 32-bit) induction variable and bound to 64 bits, so the
test is exact for every bound (no overflow near the type's limit). Each copy's loads are
independent of the next copy's address arithmetic, so U of them can be in flight: that is
the point for one-subgroup-per-row loops and for a `tensor_mma` K loop (whose resident
updates are already marked by tensor-residency; the copies keep the mark).

Targets whose assembler unrolls counted loops itself (PTX: ptxas, once the loop's stride
is constant and its exit test positive) skip the pass: on the H200 the A/B of
bench/plain_kernels.py measured the same speed with less PTX and a faster compile.

Loops qualify when they contain a load or a tensor MMA, no barrier, and at most
BODY_LIMIT instructions; U is 4 (2 when the body holds a tensor MMA, whose fragments are
register-hungry). Full unrolling (unroll.py) already took the constant-count loops.
"""
from __future__ import annotations

from ..ir.cfg import ensure_preheader
from ..ir.module import Block, Const
from ..ir.types import BOOL, I64, VOID
from .clone import clone_blocks
from .edit import fresh_block_name, make_instr, redirect
from .loop_shape import runtime_trip_count

NAME = "unroll-runtime"
BODY_LIMIT = 40


def _factor(lp) -> tuple[int | None, str]:
    ops = [i.op for b in lp.blocks for i in b.instrs]
    if "gpu.barrier" in ops:
        return None, "the loop contains a barrier"
    if len(ops) > BODY_LIMIT:
        return None, f"the body has {len(ops)} instructions (limit {BODY_LIMIT})"
    if "tensor.mma" in ops:
        return 2, ""
    if "load" in ops:
        return 4, ""
    return None, "no load to overlap"


def _widen(v, block, span) -> object:
    if isinstance(v, Const):
        return Const(I64, v.value)
    ins = make_instr("convert", I64, [v], {}, [], span, block)
    block.instrs.insert(len(block.instrs) - 1 if block.terminator else len(block.instrs), ins)
    return ins


def unroll_runtime(fn, lp, tc, factor: int) -> Block:
    """Transform `lp`; returns the new main loop's header."""
    header, latch = lp.header, lp.latch
    frame = open_main_loop(fn, lp, tc, factor)
    main, phis = frame.main, frame.phis
    inner = next(x for x in header.successors if lp.contains(x))
    span = header.terminator.span
    current = dict(frame.main_phis)
    copies: list = []
    prev_latch = prev_header = None
    for j in range(factor):
        vmap = dict(current)
        new, bmap = clone_blocks(fn, lp.blocks, vmap, f".r{j}", skip=frozenset(phis))
        h = bmap[header]
        h.instrs[-1] = make_instr("br", VOID, [], {}, [bmap[inner]], span, h)
        if prev_latch is not None:
            redirect(prev_latch.terminator, prev_header, h)
        else:
            main.instrs.append(make_instr("cbr", VOID, [frame.ok], {}, [h, frame.rest], span, main))
        prev_latch, prev_header = bmap[latch], h
        current = {p: vmap.get(frame.latch_value[p], frame.latch_value[p]) for p in phis}
        copies.extend(new)
    redirect(prev_latch.terminator, prev_header, main)    # the main loop's back edge
    close_main_loop(fn, lp, frame, [current[p] for p in phis], prev_latch, copies)
    return main


class MainLoop:
    """The parts of a main loop under construction (`open_main_loop`): its header `main`
    (phis, the group test `ok`; the caller adds the cbr to its copies and `rest`), the
    `rest` block, the original header's phis, their main-loop phis, and the value each
    phi takes from the latch."""

    def __init__(self, pre, main, rest, phis, main_phis, latch_value, ok):
        self.pre, self.main, self.rest, self.phis = pre, main, rest, phis
        self.main_phis, self.latch_value, self.ok = main_phis, latch_value, ok


def open_main_loop(fn, lp, tc, factor: int) -> MainLoop:
    """The main loop's header: a phi per header phi (entered with the preheader's value)
    and the test that U more iterations stay in range. Nothing is linked yet."""
    header, latch = lp.header, lp.latch
    pre, _ = ensure_preheader(lp)
    phis = header.phis
    incoming = {p: dict(zip(p.targets, p.operands)) for p in phis}
    span = header.terminator.span
    used = {b.name for b in fn.blocks}      # (main and rest join fn.blocks when closed)
    main = Block(fresh_block_name(fn, f"{header.name}.by{factor}", used), function=fn)
    rest = Block(fresh_block_name(fn, f"{header.name}.rest", used), function=fn)
    main_phis = {}
    for p in phis:
        mp = make_instr("phi", p.type, [incoming[p][pre]], {}, [pre], p.span, main)
        main.instrs.append(mp)
        main_phis[p] = mp
    iv = main_phis[tc.iv.phi]
    test_iv = make_instr("convert", I64, [iv], {}, [], span, main)
    main.instrs.append(test_iv)
    ahead = make_instr("add", I64, [test_iv, Const(I64, (factor - 1) * tc.step)], {}, [], span,
                  main)
    main.instrs.append(ahead)
    bound = _widen(tc.bound, main, span)
    ok = make_instr("cmp", BOOL, [ahead, bound], {"pred": tc.pred}, [], span, main)
    main.instrs.append(ok)
    frame = MainLoop(pre, main, rest, phis, main_phis, {p: incoming[p][latch] for p in phis},
                     ok)
    frame.used = used               # the block names until close_main_loop
    return frame


def close_main_loop(fn, lp, frame: MainLoop, values: list, last, blocks: list) -> None:
    """Link a main loop whose copies (`blocks`, the last of them `last`, which branches
    back to the main header and hands the phis `values`) are built: the original loop
    becomes the rest loop, entered from `rest` with the main loop's values."""
    header, pre, main, rest = lp.header, frame.pre, frame.main, frame.rest
    for p, v in zip(frame.phis, values):
        mp = frame.main_phis[p]
        mp.operands.append(v)
        mp.targets.append(last)
        p.operands = [mp if t is pre else x for x, t in zip(p.operands, p.targets)]
        p.targets = [rest if t is pre else t for t in p.targets]
    rest.instrs.append(make_instr("br", VOID, [], {}, [header], header.terminator.span, rest))
    redirect(pre.terminator, header, main)
    pos = fn.blocks.index(header)
    fn.blocks[pos:pos] = [main] + blocks + [rest]


def run(fn, analyses) -> bool:
    """Every qualifying innermost loop of one loop analysis: a rewrite only adds blocks
    outside the loops it touches, so the other innermost loops' facts stay exact."""
    if analyses.target.unrolls_loops:
        return False            # ptxas does it (measured: same loads in flight, less PTX)
    changed = False
    for lp in analyses.get("loops").innermost_first():
        factor, _ = _factor(lp)
        if factor is None:
            continue
        tc, _ = runtime_trip_count(lp)
        if tc is None:
            continue
        unroll_runtime(fn, lp, tc, factor)
        analyses.remark(lp.header.terminator.span, NAME,
                        f"loop unrolled x{factor} with a run-time trip count "
                        "(main loop tests once per group, the original loop takes the rest)")
        changed = True
    return changed
