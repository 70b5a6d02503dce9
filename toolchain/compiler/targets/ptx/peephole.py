"""Peepholes over a function's `PtxInstr` list (after instruction selection, before printing).

branch_on_inverse (cause 1 of issue 18): `setp.CMP p, a, b; ... @!p bra L` becomes
`setp.INV p, a, b; ... @p bra L` when `p` is written by that one setp and read by that one
branch. ptxas 13 does not unroll a loop whose exit branches on a negated predicate (nor one
that uses `not.pred`); the same loop with the positive branch unrolls x4. The rewrite is
exact: integer and pointer compares invert to the complementary compare, and a float
compare inverts to its *unordered* complement (`lt` -> `geu`), which is true exactly when
the original is false, NaN operands included. Only plain `bra` is rewritten: the scalar
lowering's loop and if exits; `bra.uni` branches of the tensor regions keep their form.

fold_not (runs first): `not.pred q, p; @[!]q bra L` in one basic block becomes
`@[!]!p bra L` (the `not` dropped, the polarity flipped) when q has no other mention and
nothing between them writes p.

positive_branches (runs last): any negated `@!p bra L` still left (p from a bool variable,
`and.pred`, a compare with other uses) that falls through into label M becomes
`@p bra M; bra.uni L`, the other shape ptxas unrolls; same control flow, one more branch.
"""
from __future__ import annotations

from .instr import LABEL, OP, PtxInstr

_INT_INVERSE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le",
                "lo": "hs", "hs": "lo", "ls": "hi", "hi": "ls"}
_FLOAT_INVERSE = {"eq": "neu", "ne": "equ", "lt": "geu", "le": "gtu", "gt": "leu",
                  "ge": "ltu", "equ": "ne", "neu": "eq", "ltu": "ge", "leu": "gt",
                  "gtu": "le", "geu": "lt", "num": "nan", "nan": "num"}


def inverse_compare(mods: tuple[str, ...]) -> tuple[str, ...] | None:
    """`setp` modifiers with the comparison negated, or None when it cannot be (a combining
    `.and/.or` form, or an unknown spelling)."""
    if len(mods) != 2:                            # (cmp, type) only; ftz/bool-op forms stay
        return None
    cmp, ty = mods
    table = _FLOAT_INVERSE if ty[:1] == "f" else _INT_INVERSE
    inv = table.get(cmp)
    return None if inv is None else (inv, ty)


def branch_on_inverse(body: list[PtxInstr], keep=frozenset()) -> list[PtxInstr]:
    """Return `body` with every negated single-use setp branch made positive (see module
    doc). Registers are counted over the whole function, so the setp and the branch may sit
    in different blocks; any other mention of the predicate blocks the rewrite."""
    return _branch_on_inverse(body, keep)[0]


def _branch_on_inverse(body: list[PtxInstr], keep) -> tuple[list[PtxInstr], bool]:
    """(rewritten body, whether a negated `bra` is left that this rewrite could not fix)."""
    candidates: dict[str, int] = {}               # predicate -> index of its negated bra
    left = False
    for k, ins in enumerate(body):
        if ins.negated and ins.name == "bra" and ins.kind == OP and id(ins) not in keep:
            left = left or ins.guard in candidates
            candidates[ins.guard] = k
    if not candidates:
        return body, False
    mentions = dict.fromkeys(candidates, 0)
    setps: dict[str, int] = {}
    for k, ins in enumerate(body):
        if ins.kind != OP:
            continue
        if ins.guard in mentions:
            mentions[ins.guard] += 1
        for o in ins.dsts:
            if o in mentions:
                mentions[o] += 1
                if ins.guard is None and ins.name.startswith("setp."):
                    setps[o] = k
            elif "|" in o:                        # setp's `p|q` pair
                _count(o, mentions)
        for o in ins.srcs:
            if o in mentions:
                mentions[o] += 1
            elif o[:1] == "!":                    # a negated predicate source
                _count(o, mentions)
    out = list(body)
    for p, bra in candidates.items():
        k = setps.get(p)
        inv = None
        if k is not None and mentions.get(p) == 2 and id(body[k]) not in keep:
            inv = inverse_compare(body[k].mods)   # exactly the setp's def and the branch
        if inv is None:
            left = True
            continue
        out[k] = body[k].replaced(name="setp." + ".".join(inv))
        out[bra] = body[bra].replaced(negated=False)
    return out, left


def _count(o: str, mentions: dict[str, int]) -> None:
    """Count the predicates inside the `!p` and `p|q` spellings."""
    for r in o.lstrip("!").split("|"):
        if r in mentions:
            mentions[r] += 1


def fold_not(body: list[PtxInstr], keep=frozenset()) -> list[PtxInstr]:
    """Branch on `p` instead of on `not.pred q, p` (see module doc)."""
    nots = {ins.dsts[0]: k for k, ins in enumerate(body)
            if ins.kind == OP and ins.name == "not.pred" and ins.guard is None
            and id(ins) not in keep}
    if not nots:
        return body
    mentions = dict.fromkeys(nots, 0)
    bras: dict[str, int] = {}
    for k, ins in enumerate(body):
        if ins.kind != OP:
            continue
        if ins.guard in mentions:
            mentions[ins.guard] += 1
            if ins.name == "bra":
                bras[ins.guard] = k
        for o in ins.dsts + ins.srcs:
            if o in mentions:
                mentions[o] += 1
            elif o[:1] == "!" or "|" in o:
                _count(o, mentions)
    out: list[PtxInstr | None] = list(body)
    for q, k in nots.items():
        b = bras.get(q)
        if b is None or b < k or mentions[q] != 2 or id(body[b]) in keep:
            continue
        p = body[k].srcs[0]
        if p[:1] == "!" or any(_writes(i, p) for i in body[k + 1:b]):
            continue
        out[b] = body[b].replaced(guard=p, negated=not body[b].negated)
        out[k] = None
    return [i for i in out if i is not None]


def _writes(ins: PtxInstr, p: str) -> bool:
    """True when `ins` may change register p, or control may enter between (a label)."""
    if ins.kind == LABEL:
        return True
    return ins.kind == OP and any(o == p or (("|" in o) and p in o.split("|"))
                                  for o in ins.dsts)


def positive_branches(body: list[PtxInstr], keep=frozenset()) -> list[PtxInstr]:
    """`@!p bra L` falling through into label M -> `@p bra M; bra.uni L`."""
    out: list[PtxInstr] = []
    for k, ins in enumerate(body):
        if ins.negated and ins.name == "bra" and ins.kind == OP and k + 1 < len(body) \
                and body[k + 1].kind == LABEL and id(ins) not in keep:
            out.append(ins.replaced(srcs=(body[k + 1].name,), negated=False))
            out.append(PtxInstr(OP, "bra.uni", (), ins.srcs))
        else:
            out.append(ins)
    return out


def run(body: list[PtxInstr], keep=frozenset()) -> list[PtxInstr]:
    """Every peephole, in order. Instructions whose id is in `keep` (the tensor lowerings'
    lines, which keep the exact shape their own tests check) are counted but never
    rewritten."""
    body, left = _branch_on_inverse(fold_not(body, keep), keep)
    return positive_branches(body, keep) if left else body
