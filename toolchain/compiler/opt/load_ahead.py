"""load-ahead: more loads in flight in the loops the assembler leaves (nearly) rolled.

ptxas unrolls a counted loop of loads x4 by itself (so unroll-runtime skips targets with
`unrolls_loops`), but SASS shows that it keeps a loop that also stores rolled, one
iteration per trip (softmax's normalising pass, layer norm's output pass): each store waits
for its own load and the next load cannot issue before that store, so a warp with one row
has one load in flight. On the H200 (bench/plain_kernels.py, one subgroup per row) 16
copies of a store loop and 8 of a load-only loop striding by the subgroup width, loads
first, measured fastest (a load-only loop with another step keeps ptxas's own x4). On such
targets this pass unrolls those loops with unroll-runtime's mechanism (a main loop of U
copies that tests once per group; the original loop runs the rest), merges the copies into
one block and moves every copy's loads, with the address arithmetic they read, above the
rest of the group.

For a loop that stores, that reorder is exact only if no store of a group writes bytes that
a load moved above it reads. Every load and store address must advance by the same positive
A bytes per iteration (base + i*size through ptradd/byteadd of a widened induction variable,
or a pointer induction variable), so a store S and a load L keep one distance e = addr(S) -
addr(L) for the whole loop. Moving L of copy j above S of copy i needs no overlap for
k = j - i in kmin..U-1 (kmin 0 when S precedes L in the body, else 1): e <= A*kmin -
width(S) or e >= A*(U-1) + width(L). The preheader computes e for every pair that may alias
and the main loop runs only when all pass; otherwise the original loop does all the work
(in-place updates such as `y = x` stay correct, just rolled). Values, rounding and the
order of every float operation are unchanged: only loads move.
"""
from __future__ import annotations

from operator import itemgetter

from ..ir.cfg import ensure_preheader
from ..ir.module import Block, Const, Instr
from ..ir.types import BOOL, I64, VOID
from .edit import fresh_block_name, make_instr
from . import reread
from .loop_shape import runtime_trip_count
from .op_facts import PURE
from .unroll_runtime import BODY_LIMIT, close_main_loop, open_main_loop

NAME = "load-ahead"
STORE_FACTOR = 16         # measured on the H200 against 4 and 8 (docs/internals/optimizer.md)
LOAD_FACTOR = 8           # ptxas's own x4 and 16 measured slower
_SPECIFIC = ("global", "workgroup", "private", "constant")


def _kind(lp) -> tuple[str | None, str]:
    """("store" | "load" | None, refusal reason) for a loop of one header + one body."""
    if len(lp.blocks) != 2 or lp.latch is not lp.blocks[1]:
        return None, ""
    ops = []
    for i in lp.header.instrs:
        op = i.op
        if op == "load" or op == "store":
            return None, ""
        if op != "phi" and op != "br" and op != "cbr":
            ops.append(op)
    for i in lp.latch.instrs:
        op = i.op
        if op != "phi" and op != "br" and op != "cbr":
            ops.append(op)
    if "load" not in ops:
        return None, ""
    kind = "store" if "store" in ops else "load"
    other = [o for o in ops if o not in PURE and o != "load" and o != "store"]
    if other:
        return None, f"the body also executes {min(other)}" if kind == "store" else ""
    if len(ops) > BODY_LIMIT:
        return None, f"the body has {len(ops)} instructions (limit {BODY_LIMIT})" \
            if kind == "store" else ""
    return kind, ""


def _rates(lp, tc) -> dict:
    """Per-iteration advance of the header phis that are induction variables: the counted
    IV by its step, a pointer IV (`p = phi [..], [ptradd p, c]`) by c elements' bytes."""
    rates = {tc.iv.phi: tc.step}
    for phi in lp.header.phis:
        if phi is tc.iv.phi or not phi.type.is_ptr:
            continue
        upd = [v for v, b in phi.incoming if lp.contains(b)]
        if len(upd) == 1 and isinstance(upd[0], Instr) and upd[0].op == "ptradd" \
                and upd[0].operands[0] is phi and isinstance(upd[0].operands[1], Const):
            rates[phi] = upd[0].operands[1].value * phi.type.pointee.size
    return rates


def _advance(v, lp, rates, memo) -> int | None:
    """How much `v` grows per iteration (bytes for pointers), exactly; None when unknown.
    Only arithmetic that cannot wrap inside one group is followed: 64-bit integer adds,
    subtractions and constant multiplies, widening of an induction variable, ptradd and
    byteadd; anything loop-variant else (a load, a 32-bit sum) is not affine."""
    if lp.is_invariant(v):
        return 0
    if v in rates:
        return rates[v]
    if v in memo:
        return memo[v]
    r = None
    ops = v.operands
    if v.op == "convert" and v.type.is_int and v.type.bits == 64 and ops[0] in rates \
            and ops[0].type.is_int:
        r = rates[ops[0]]
    elif v.op in ("add", "sub") and v.type.is_int and v.type.bits == 64:
        a, b = _advance(ops[0], lp, rates, memo), _advance(ops[1], lp, rates, memo)
        if a is not None and b is not None:
            r = a + b if v.op == "add" else a - b
    elif v.op in ("mul", "shl") and v.type.is_int and v.type.bits == 64 \
            and isinstance(ops[1], Const) and (v.op == "mul" or 0 <= ops[1].value < 32):
        a = _advance(ops[0], lp, rates, memo)
        if a is not None:
            r = a * ops[1].value if v.op == "mul" else a << ops[1].value
    elif v.op == "ptradd":
        a, b = _advance(ops[0], lp, rates, memo), _advance(ops[1], lp, rates, memo)
        if a is not None and b is not None:
            r = a + b * v.type.pointee.size
    elif v.op == "byteadd":
        a, b = _advance(ops[0], lp, rates, memo), _advance(ops[1], lp, rates, memo)
        if a is not None and b is not None:
            r = a + b
    memo[v] = r
    return r


def _may_alias(p, q) -> bool:
    sp, sq = p.type.space, q.type.space
    return sp == sq or sp not in _SPECIFIC or sq not in _SPECIFIC


# A distance between addresses means something only within one address space (a generic
# address of workgroup memory is not its workgroup address).
_MIXED = "a store and a load in different address spaces may alias"


def _pairs(lp, tc):
    """The (store, load, kmin) pairs to test, the common advance A, or a refusal reason."""
    body = lp.blocks[1].instrs
    rates, memo = _rates(lp, tc), {}
    mems = [i for b in lp.blocks for i in b.instrs if i.op in ("load", "store")]
    advance = None
    for m in mems:
        a = _advance(m.operands[0], lp, rates, memo)
        if a is None:
            return None, 0, f"the address of a {m.op} is not affine in the induction variable"
        if advance is None:
            advance = a
        elif a != advance:
            return None, 0, "the loads and stores do not advance by the same bytes per iteration"
    if advance is None or not 0 < advance < 1 << 24:
        return None, 0, "the addresses do not advance upwards by less than 16 MiB"
    pairs = []
    order = {id(i): k for k, i in enumerate(body)}
    for s in (i for i in mems if i.op == "store"):
        for ld in (i for i in mems if i.op == "load"):
            if _may_alias(s.operands[0], ld.operands[0]):
                if s.operands[0].type.space != ld.operands[0].type.space:
                    return None, 0, _MIXED
                kmin = 0 if order.get(id(s), -1) < order.get(id(ld), -1) else 1
                pairs.append((s, ld, kmin))
    return pairs, advance, ""


def _at_entry(v, lp, pre, vmap):
    """`v` as computed on the loop's first iteration: its in-loop arithmetic cloned into the
    preheader with every header phi read as its incoming value."""
    if lp.is_invariant(v):
        return v
    if v in vmap:
        return vmap[v]
    if v.op == "phi":
        out = v.operands[v.targets.index(pre)]
    else:
        c = v.clone()
        ops = c.operands
        for k in range(len(ops)):
            ops[k] = _at_entry(ops[k], lp, pre, vmap)
        c.block = pre
        pre.instrs.insert(len(pre.instrs) - 1, c)
        out = c
    vmap[v] = out
    return out


def _emit(pre, op, type_, operands: list, attrs=None, span=None):
    """`op` before the preheader's branch (`operands`, `attrs`: fresh, the instruction's own)."""
    ins = make_instr(op, type_, operands, {} if attrs is None else attrs, [], span, pre)
    pre.instrs.insert(len(pre.instrs) - 1, ins)
    return ins


def _no_overlap_test(lp, pre, pairs, advance: int, factor: int):
    """The preheader's bool: every (store, load) pair keeps its distance outside the window
    in which the reorder would let a load overtake a store to the same bytes."""
    vmap: dict = {}
    ok = None
    span = lp.header.terminator.span
    for s, ld, kmin in pairs:
        sa = _emit(pre, "ptrtoint", I64, [_at_entry(s.operands[0], lp, pre, vmap)], span=span)
        la = _emit(pre, "ptrtoint", I64, [_at_entry(ld.operands[0], lp, pre, vmap)], span=span)
        e = _emit(pre, "sub", I64, [sa, la], span=span)
        below = _emit(pre, "cmp", BOOL, [e, Const(I64, advance * kmin - s.operands[1].type.size)],
                      {"pred": "le"}, span)
        above = _emit(pre, "cmp", BOOL, [e, Const(I64, advance * (factor - 1) + ld.type.size)],
                      {"pred": "ge"}, span)
        one = _emit(pre, "or", BOOL, [below, above], span=span)
        ok = one if ok is None else _emit(pre, "and", BOOL, [ok, one], span=span)
    return ok


def _group(fn, lp, tc, factor: int, safe=None, advance: int | None = None):
    """Unroll `lp` into a main loop whose body is one block holding `factor` copies, built
    directly in their final form; returns that block, the loads of a group and whether a
    main-loop phi is trivial (see `run`). The form is unroll_runtime's copies
    merged into one block, with address increments instead of recomputation: copy j's
    access k is copy 0's address + j*A bytes, one increment per address and copy (exact:
    the main loop's test keeps every copy's induction value below the bound, so no copy's
    index wraps, and 64-bit address arithmetic is linear) and the group advances the
    induction variable once. What no copy reads any more (the copies' own index chains,
    the header tests) is never built: liveness is marked on the template positions of
    each copy first, from the copies' loads and stores and the values the main loop's
    phis take from the last copy.
    `advance`: every access's advance A, when _pairs found one for all."""
    header, body = lp.header, lp.latch
    frame = open_main_loop(fn, lp, tc, factor)
    main, phis = frame.main, frame.phis
    span = header.terminator.span
    if safe is not None:
        both = make_instr("and", BOOL, [frame.ok, safe], {}, [], span, main)
        main.instrs.append(both)
        cond = both
    else:
        cond = frame.ok
    group = Block(fresh_block_name(fn, f"{header.name}.r0", frame.used), function=fn)
    main.instrs.append(make_instr("cbr", VOID, [cond], {}, [group, frame.rest], span, main))
    tmpl = header.instrs[len(phis):-1] + body.instrs[:-1]
    nt, nph = len(tmpl), len(phis)
    rebased = {}        # access template position -> its advance A (bytes per iteration)
    loads = 0           # (the header has none: _kind)
    rates, memo = (_rates(lp, tc), {}) if advance is None else (None, None)
    for n, m in enumerate(body.instrs, nt + 1 - len(body.instrs)):
        if m.op in ("load", "store"):
            loads += m.op == "load"
            a = advance if rates is None else _advance(m.operands[0], lp, rates, memo)
            if a:
                rebased[n] = a
    # One copy is built at a time in a window: [its header phis' values] + [its own values,
    # by template position] + [the values from outside the loop]; every operand of the
    # template is a fixed slot of it (a copy reads one or two operands by their slots, more
    # with one itemgetter call).
    reads, upd, outside = _window(phis, tmpl, [frame.latch_value[p] for p in phis])
    # (upd: the slots copy j+1's phis take from copy j)
    # Accesses through one address share each copy's increment of it (the one an earlier
    # access built), unless a hoisted load would read a store's, built below it.
    twin, made = {}, {}
    for n in sorted(rebased):
        hoisted = tmpl[n].op == "load"
        t = made.get(reads[n][0])
        if t is not None and hoisted <= t[1]:
            twin[n] = t[0]
        else:
            made[reads[n][0]] = (n, hoisted)
    plan = []
    for n, t in enumerate(tmpl):
        r = reads[n]
        src = r if len(r) < 3 else itemgetter(*r)     # (indexing beats a C call)
        plan.append((n, t.op, t.type, t.attrs, t.span, src, len(r), rebased.get(n, 0),
                     twin.get(n, -1)))
    pats = _liveness(tmpl, plan, reads, upd, nph, factor,
                     [k for k, p in enumerate(phis) if p is not tc.iv.phi])
    win = [frame.main_phis[p] for p in phis] + [None] * nt + outside
    first: dict = {}        # rebased position -> copy 0's address
    addr = [None] * nt      # rebased position -> its address in the current copy
    up, down = [], []
    carry = itemgetter(*upd) if nph > 1 else None
    for j in range(factor):
        if j:                       # copy j's phis take copy j-1's values
            if nph == 1:            # (most loops: the induction variable alone)
                win[0] = win[upd[0]]
            else:
                win[:nph] = carry(win)
        for (n, op, ty, attrs, sp, src, arity, adv, tw), h in pats[j]:
            if arity == 2:
                ops = [win[src[0]], win[src[1]]]
            elif arity == 1:
                ops = [win[src[0]]]
            else:
                ops = list(src(win)) if arity else []
            c = make_instr(op, ty, ops, attrs.copy() if attrs else {}, [], sp, group)
            out = up if h else down
            if adv:
                if not j:
                    first[n] = ops[0]
                elif tw < 0:
                    a0 = first[n]
                    at = addr[n] = make_instr("byteadd", a0.type, [a0, Const(I64, j * adv)], {},
                                         [], sp, group)
                    out.append(at)
                    ops[0] = at
                else:
                    ops[0] = addr[tw]
            out.append(c)
            win[nph + n] = c
    last = [win[s] for s in upd]
    latch_br = body.terminator
    iv = frame.main_phis[tc.iv.phi]
    step = make_instr("add", iv.type, [iv, Const(iv.type, factor * tc.step)], {}, [],
                 latch_br.span, group)
    down.append(step)
    down.append(make_instr("br", VOID, [], latch_br.attrs.copy() if latch_br.attrs else {}, [main],
                      latch_br.span, group))
    group.instrs = up + down
    values = [step if p is tc.iv.phi else v for p, v in zip(phis, last)]
    close_main_loop(fn, lp, frame, values, group, [group])
    # simplify-cfg's only possible work here: a main-loop phi that gets back its own
    # value or its entry value (a rotation of phis that comes full circle in a group)
    trivial = False
    for p, v in zip(phis, values):
        mp = frame.main_phis[p]
        trivial |= v is mp or v is mp.operands[0]
    return group, factor * loads, trivial


def _window(phis, tmpl, carried) -> tuple[list, list, list]:
    """The window slot of each value a copy reads: a header phi k at k, template position
    n at len(phis) + n, a value from outside the loop at its own slot past those (one per
    read). Returns the slots of each template operand, those of `carried` (the values the
    next copy's phis take), and the outside values in slot order."""
    nph = len(phis)
    slot = {p: k for k, p in enumerate(phis)}
    for n, t in enumerate(tmpl):
        slot[t] = nph + n
    outside: list = []
    base = nph + len(tmpl)
    reads = []
    for ops in [t.operands for t in tmpl] + [carried]:     # (plain loops: no call per read)
        r = []
        for o in ops:
            s = slot.get(o) if o.__class__ is Instr else None
            if s is None:
                s = base + len(outside)
                outside.append(o)
            r.append(s)
        reads.append(r)
    carried_slots = reads.pop()
    return reads, carried_slots, outside


def _liveness(tmpl, plan, reads, upd, nph, factor, carried_out) -> list:
    """Per copy, its live template positions in order, as `(plan[n], hoisted)`: hoisted
    are the loads and what a hoisted value reads. Swept from the last copy back (every
    operand comes before its user in (copy, position) order): a copy's pattern depends only
    on which of its values the next copy's phis read (and on whether it is copy 0, whose
    accesses compute their own address: the others read copy 0's), so once two copies
    past copy 0 are read alike, every earlier one but copy 0 repeats the pattern."""
    nt = len(tmpl)
    roots = bytearray(nt)       # 1 live (a store), 3 live and hoisted (a load)
    skip0 = [False] * nt        # rebased: the address is copy 0's + j*A
    for n, t in enumerate(tmpl):
        op = t.op
        if op not in PURE:
            roots[n] = 3 if op == "load" else 1
            skip0[n] = plan[n][7] != 0
    need = bytearray(nph)
    for k in carried_out:       # the main loop's phis read the last copy's values
        need[k] = 1
    pats: list = [None] * factor
    prev = None                 # (the need and pattern of the copy after this one)
    j = factor - 1
    while j >= 0:
        if j and prev is not None and need == prev[0]:
            pats[1:j + 1] = [prev[1]] * j       # copies j..1 all repeat it
            j = 0
            continue
        lv = bytearray(roots)
        got = bytearray(nph)
        for k in range(nph):
            f = need[k]
            if f:
                s = upd[k]
                if s < nph:
                    got[s] |= f
                elif s < nph + nt:
                    lv[s - nph] |= f
        for n in range(nt - 1, -1, -1):
            f = lv[n]
            if not f:
                continue
            r = reads[n][1:] if j and skip0[n] else reads[n]
            for s in r:
                if s < nph:
                    got[s] |= f
                elif s < nph + nt:
                    lv[s - nph] |= f
        pat = [(plan[n], f >> 1) for n, f in enumerate(lv) if f]
        pats[j] = pat
        if j:
            prev = (need, pat)  # (a need is never written once it is a copy's)
        need = got
        j -= 1
    return pats


def run(fn, analyses) -> bool:
    """The loops that qualify. The new blocks give simplify-cfg nothing to do (no constant
    branch, no block with a single predecessor ending in `br`: the main header has two
    predecessors, the group and `rest` hang off its cbr, the original header keeps two,
    and a preheader made here has several predecessors or one ending in a cbr) unless a
    main-loop phi is trivial: without one, simplify-cfg's fixpoint is kept."""
    if not (analyses.gpu and analyses.target.unrolls_loops):
        return False            # elsewhere unroll-runtime unrolls these loops itself
    nest = analyses.get("loops")
    if not nest.loops:
        return False
    nest = nest.innermost_first()
    changed = reread.mark(fn, analyses, nest) > 0     # before unrolling: copies inherit it
    work = False                # whether a trivial phi was made (for simplify-cfg)
    for lp in nest:
        kind, why = _kind(lp)
        span = lp.header.terminator.span
        if kind is None:
            if why:
                analyses.remark(span, NAME, f"loop with stores left rolled: {why}")
            continue
        tc, _ = runtime_trip_count(lp)
        if tc is None:
            continue
        if kind == "load":
            width = analyses.target.subgroup_width
            if not width or tc.step % width:
                continue        # ptxas's own x4 (only subgroup-strided rows were measured)
            _, loads, trivial = _group(fn, lp, tc, LOAD_FACTOR)
            work |= trivial
            analyses.remark(span, NAME, f"loop unrolled x{LOAD_FACTOR} with a run-time trip "
                            f"count: the {loads} loads of a group issue first")
            changed = True
            continue
        pairs, advance, why = _pairs(lp, tc)
        if pairs is None:
            analyses.remark(span, NAME, f"loop with stores left rolled: {why}")
            continue
        pre, _ = ensure_preheader(lp)
        safe = _no_overlap_test(lp, pre, pairs, advance, STORE_FACTOR) if pairs else None
        _, loads, trivial = _group(fn, lp, tc, STORE_FACTOR, safe, advance)
        work |= trivial
        test = (f"; run-time test: {len(pairs)} store/load pair(s) do not overlap within a "
                "group, else the original loop runs") if pairs else ""
        analyses.remark(span, NAME, f"loop with stores unrolled x{STORE_FACTOR}: the {loads} "
                        f"loads of a group issue before its stores{test}")
        changed = True
    if changed and not work:
        analyses.keep_fixpoint("simplify-cfg")
    return changed
