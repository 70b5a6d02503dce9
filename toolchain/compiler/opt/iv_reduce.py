"""iv-reduce: induction-variable strength reduction of array addresses.

In an innermost counted loop whose induction variable i steps by +1 under `i < n` (or by
-1 under `i > n`), an address `ptradd(base, wide(i))` with a loop-invariant base is replaced by a
pointer induction variable: `p = phi [base + wide(init), preheader], [p + step, latch]`.
The body then bumps one pointer instead of recomputing base + i*size every iteration, and
every address with the same base and index shares it.

Exactness: the address equals the old one as long as wide(i) steps by exactly one, i.e. i
never wraps while the loop uses it. With a step of +1 tested by `i < n`, every value the
body sees satisfies i < n <= the type's maximum, so i + 1 cannot wrap before the test fails
(symmetrically for -1 and `>`); other steps and tests are left alone (a stride of 32 may
wrap past the bound; ptxas strength-reduces those itself).
"""
from __future__ import annotations

from ..ir.cfg import ensure_preheader
from ..ir.module import Const, Instr, replace_all_uses_with
from ..ir.types import I64
from .edit import make_instr

NAME = "iv-reduce"


def _index_of(x: Instr, iv) -> bool:
    """Whether ptradd `x` indexes by exactly the widened induction variable."""
    idx = x.operands[1]
    if idx is iv.phi:
        return True
    return isinstance(idx, Instr) and idx.op == "convert" and idx.operands[0] is iv.phi \
        and idx.type == I64


def _reduce(fn, lp, remarks) -> bool:
    if lp.latch is None:
        return False
    tc = lp.trip_count()
    if tc is None or tc.tests_next or tc.exiting is not lp.header:
        return False
    if not ((tc.step == 1 and tc.pred == "lt") or (tc.step == -1 and tc.pred == "gt")):
        return False
    iv = tc.iv
    found: dict = {}
    for b in lp.blocks:
        for ins in b.instrs:
            if ins.op == "ptradd" and lp.is_invariant(ins.operands[0]) and _index_of(ins, iv):
                found.setdefault((ins.operands[0], ins.type), []).append(ins)
    if not found:
        return False
    pre, _ = ensure_preheader(lp)
    header, latch = lp.header, lp.latch
    for (base, ptype), uses in found.items():
        init = iv.init
        if init.type != I64:
            if isinstance(init, Const):
                init = Const(I64, init.value)
            else:
                init = make_instr("convert", I64, [init], {}, [], None, pre)
                pre.insert(len(pre.instrs) - 1, init)
        if isinstance(init, Const) and init.value == 0 and base.type == ptype:
            start = base                         # the common `for i in 0..n`
        else:
            start = make_instr("ptradd", ptype, [base, init], {}, [], uses[0].span, pre)
            pre.insert(len(pre.instrs) - 1, start)
        phi = make_instr("phi", ptype, [start], {}, [pre], uses[0].span, header)
        header.insert(0, phi)
        nxt = make_instr("ptradd", ptype, [phi, Const(I64, tc.step)], {}, [], uses[0].span, latch)
        latch.insert(len(latch.instrs) - 1, nxt)
        phi.operands.append(nxt)
        phi.targets.append(latch)
        for x in uses:
            replace_all_uses_with(fn, x, phi)
        remarks(uses[0].span or header.terminator.span,
                f"address of {len(uses)} access(es) strength-reduced to a pointer stepping "
                f"by {tc.step} element(s) per iteration")
    return True


def run(fn, analyses) -> bool:
    def remarks(span, text):
        analyses.remark(span, NAME, text)

    changed = False
    for lp in analyses.get("loops").innermost_first():
        if not lp.children and _reduce(fn, lp, remarks):
            changed = True
    return changed
