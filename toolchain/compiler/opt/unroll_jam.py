"""unroll-jam: an outer counted loop runs U iterations at once around one inner loop.

    for j in a..n { P(j); for k { I(j, k) }; E(j) }
 -> while (j < n && j + 1 < n && ...) { P(j); P(j+1); ...; for k { I(j, k); I(j+1, k); ... };
                                        E(j); E(j+1); ...; j += U }
    then the original loop finishes from j

A reduction in the inner loop (matmul's `s = s + a[i*n+k] * b[k*n+j]`) is one chain of
dependent float adds, which no reassociation may split; jamming gives U independent
chains per inner iteration, and gvn merges what the copies share (the a[] load). U is 4
when the inner latch has at most SMALL_BODY instructions, else 2. Host only (ptxas
schedules device code itself, and GPU -O output stays as it was).

The shape taken (after licm, in SSA): the outer loop's header holds only its induction
variable (step +1, tested `j < n` there with an invariant n) and that test; one block P
leads into the inner loop, whose only exit E is the outer latch; the inner loop is a
header (phis, its own `k < m` test, m and k's start invariant in the outer loop, so both
copies run the same inner iterations) and one straight-line latch. No calls or other
effects; stores only in E, each disjoint (pointer facts) from every load of P and the
inner loop, since the second copy's loads now run before the first copy's stores; no
value of the nest is used after it. The tests `j + m < n` are and-ed: j + m + 1 can wrap
only when j + m < n failed, so the conjunction is exact.
"""
from __future__ import annotations

from ..ir.cfg import ensure_preheader
from ..ir.module import Block, Const, Instr
from ..ir.types import BOOL, VOID
from .edit import fresh_block_name, make_instr, speculation_safe

NAME = "unroll-jam"
BODY_LIMIT = 40
SMALL_BODY = 16                 # an inner latch this small is jammed x4 (else x2)
MAX_NESTS = 8                   # jammed nests per function (compile time, code size)


def run(fn, analyses) -> bool:
    if analyses.gpu:
        return False
    done: set = set()           # headers of jammed loops and of the loops finishing them
    changed = False
    for _ in range(MAX_NESTS):
        for outer in analyses.get("loops").loops:
            if len(outer.children) != 1 or outer.header in done:
                continue
            shape = _shape(outer, analyses)
            if shape is not None:
                break
        else:
            break
        factor = 4 if len(shape[3].instrs) <= SMALL_BODY else 2
        done.add(outer.header)
        done.add(_jam(fn, outer, *shape, factor))
        analyses.remark(outer.header.terminator.span, NAME,
                        f"ran the outer loop {factor} iterations at a time around its "
                        "inner loop")
        changed = True
        analyses.invalidate("all")          # the next nest is found in a fresh loop nest
    return changed


def _shape(outer, analyses):
    inner = outer.children[0]
    if inner.children or outer.latch is None or inner.latch is None:
        return None
    tc = outer.trip_count()
    if tc is None or tc.tests_next or tc.exiting is not outer.header or tc.step != 1 \
            or tc.pred != "lt":
        return None
    uses = analyses.get("uses")
    dead = _dead_phis(outer.fn, uses)
    head = outer.header
    live = head.instrs[:len(head.phis)]
    if [p for p in live if p not in dead] != [tc.iv.phi]:
        return None                         # the IV is all the outer loop carries
    if len(head.instrs) != len(live) + 2 or \
            head.instrs[-2] is not tc.exiting.terminator.operands[0]:
        return None
    body = [b for b in head.successors if outer.contains(b)]
    if len(body) != 1:
        return None
    pre, ih, il, post = body[0], inner.header, inner.latch, outer.latch
    if pre.successors != [ih] or len(inner.blocks) != 2 or il.successors != [ih] \
            or inner.exits != [post] or post.successors != [head] \
            or set(outer.blocks) != {head, pre, ih, il, post} or pre.phis or post.phis:
        return None
    itc = inner.trip_count()
    if itc is None or itc.exiting is not ih or not outer.is_invariant(itc.bound) \
            or not outer.is_invariant(itc.init):
        return None
    ih_rest = ih.instrs[len(ih.phis):]
    if len(ih_rest) != 2 or ih_rest[0] is not ih.terminator.operands[0]:
        return None
    if sum(len(b.instrs) for b in (pre, ih, il)) > BODY_LIMIT:
        return None
    loads, stores = [], []
    for b in (pre, il, post):
        for ins in b.instrs[:-1]:
            if ins.op == "load":
                if b is not post:           # E's loads keep their place after P', I'
                    loads.append(ins)
            elif ins.op == "store" and b is post:
                stores.append(ins)
            elif not speculation_safe(ins):
                return None                 # calls, atomics, barriers, trapping division
    facts = analyses.get("pointers")
    for s in stores:
        size = s.operands[1].type.size
        if any(not facts.disjoint(s.operands[0], size, ld.operands[0], ld.type.size)
               for ld in loads):
            return None
    inside = set(outer.blocks)
    for b in outer.blocks:
        for ins in b.instrs:
            if any(u.block not in inside and u not in dead for u in uses.uses(ins)):
                return None
    for test in (head.instrs[-2], ih_rest[0]):      # the tests feed only their branches
        if len(uses.uses(test)) != 1:
            return None
    return tc, pre, ih, il, post, itc


def _dead_phis(fn, uses) -> set:
    """Phis whose values reach no instruction but other such phis (mem2reg leaves them for
    a source variable declared inside a loop; dce deletes them later)."""
    phis = [i for b in fn.blocks for i in b.phis]
    live = {p for p in phis if any(u.op != "phi" for u in uses.uses(p))}
    work = list(live)
    while work:
        for o in work.pop().operands:
            if o.__class__ is Instr and o.op == "phi" and o not in live:
                live.add(o)
                work.append(o)
    return {p for p in phis if p not in live}


def _jam(fn, outer, tc, pre, ih, il, post, itc, factor: int):
    """Build the jammed loop in front of `outer`; returns its header."""
    head, j = outer.header, tc.iv.phi
    span = head.terminator.span
    preheader, _ = ensure_preheader(outer)
    entry_j = dict(zip(j.targets, j.operands))[preheader]
    used = {b.name for b in fn.blocks}

    def block(stem):
        b = Block(fresh_block_name(fn, f"{head.name}.{stem}", used), function=fn)
        used.add(b.name)
        return b
    h2, p2, ih2, il2, e2 = (block(s) for s in ("jam", "jam.pre", "jam.inner", "jam.body",
                                               "jam.post"))
    # the jammed loop's header: j+m < n for every copy m. An and of all the tests: j+m+1
    # wraps only past the type's maximum, which j+m < n already rules out
    j2 = h2.append(make_instr("phi", j.type, [entry_j], {}, [preheader], j.span))
    js, ok = [j2], None
    for m in range(factor):
        if m:
            js.append(h2.append(make_instr("add", j.type, [j2, Const(j.type, m)], {}, [], span)))
        c = h2.append(make_instr("cmp", BOOL, [js[m], tc.bound], {"pred": "lt"}, [], span))
        ok = c if ok is None else h2.append(make_instr("and", BOOL, [ok, c], {}, [], span))
    h2.append(make_instr("cbr", VOID, [ok], {}, [p2, head], span))
    k, kup = itc.iv.phi, itc.iv.update
    k2 = make_instr("phi", k.type, [], {}, [], k.span)
    maps = [{j: jm, k: k2} for jm in js]
    for vmap in maps:                        # P for each copy
        _copy(pre.instrs[:-1], p2, vmap)
    p2.append(make_instr("br", VOID, [], {}, [ih2], span))
    ih2.append(k2)
    phis = []
    for vmap in maps:                        # the inner header's other phis, per copy
        for phi in ih.phis:
            if phi is k:
                continue
            c = ih2.append(make_instr("phi", phi.type, [], {}, [], phi.span))
            vmap[phi] = c
            phis.append((phi, c, vmap))
    test = ih.instrs[len(ih.phis)]
    t2 = ih2.append(make_instr(test.op, test.type, [maps[0].get(o, o) for o in test.operands],
                          dict(test.attrs), [], test.span))
    stay = ih.terminator.targets[0] is il
    ih2.append(make_instr("cbr", VOID, [t2], {}, [il2, e2] if stay else [e2, il2], span))
    for vmap in maps:                        # I for each copy (k's update once, shared)
        _copy([i for i in il.instrs[:-1] if i is not kup], il2, vmap)
    kup2 = il2.append(make_instr(kup.op, kup.type, [maps[0].get(o, o) for o in kup.operands],
                            dict(kup.attrs), [], kup.span))
    for vmap in maps:
        vmap[kup] = kup2
    il2.append(make_instr("br", VOID, [], {}, [ih2], span))
    init = dict(zip(k.targets, k.operands))
    k2.operands, k2.targets = [init[pre], kup2], [p2, il2]
    for phi, c, vmap in phis:
        arms = dict(zip(phi.targets, phi.operands))
        c.operands = [vmap.get(arms[pre], arms[pre]), vmap.get(arms[il], arms[il])]
        c.targets = [p2, il2]
    for vmap in maps:                        # E for each copy, in order
        _copy(post.instrs[:-1], e2, vmap)
    step = e2.append(make_instr("add", j.type, [j2, Const(j.type, factor)], {}, [], span))
    e2.append(make_instr("br", VOID, [], {}, [h2], span))
    j2.operands.append(step)
    j2.targets.append(e2)
    # enter the jammed loop; the original finishes from its j
    term = preheader.terminator
    term.targets = [h2 if t is head else t for t in term.targets]
    for phi in head.phis:                    # j from the jammed loop; dead phis: anything
        arms = dict(zip(phi.targets, phi.operands))
        phi.targets = [h2 if t is preheader else t for t in phi.targets]
        phi.operands = [(j2 if phi is j else arms[preheader]) if t is h2 else v
                        for v, t in zip(phi.operands, phi.targets)]
    at = fn.blocks.index(head)
    fn.blocks[at:at] = [h2, p2, ih2, il2, e2]
    return h2


def _copy(instrs, block, vmap) -> None:
    for ins in instrs:
        c = ins.clone()
        c.operands = [vmap.get(o, o) if isinstance(o, Instr) else o for o in c.operands]
        block.append(c)
        vmap[ins] = c
