"""DomTree and LoopInfo on random CFGs against plain reference definitions: RPO from a
recursive DFS (successor order kept), dominators from the set dataflow fixpoint, children
in RPO, back edges as the tree lists them, loops from their latches' definition. Covers
the shapes structured code never makes too: self loops, edges back into the entry, unreachable
blocks, irreducible cycles, repeated cbr targets."""
from __future__ import annotations

import random

import pytest

from toolchain.compiler.ir.cfg import DomTree, LoopInfo, block_predecessors
from toolchain.compiler.ir.reader import parse_function


def _random_function(seed: int):
    rng = random.Random(seed)
    n = rng.randint(1, 14)
    lines = ["function @f(%c: bool) -> void {"]
    for i in range(n):
        lines.append(f"b{i}:")
        r = rng.random()
        # mostly forward edges (structured code), some back and irregular ones
        def pick():
            if rng.random() < 0.7 and i + 1 < n:
                return rng.randint(i + 1, min(n - 1, i + 3))
            return rng.randrange(n)
        if r < 0.15 or n == 1:
            lines.append("  ret")
        elif r < 0.5:
            lines.append(f"  br b{pick()}")
        else:
            lines.append(f"  cbr %c, b{pick()}, b{pick()}")
    lines.append("}")
    return parse_function("\n".join(lines))


def _succ(b):
    return b.instrs[-1].targets


def _reference_rpo(fn):
    seen, post = set(), []

    def visit(b):
        seen.add(b)
        for s in _succ(b):
            if s not in seen:
                visit(s)
        post.append(b)
    visit(fn.blocks[0])
    return post[::-1]


def _reference_dominators(fn, rpo):
    preds = block_predecessors(fn)
    reach = set(rpo)
    dom = {b: set(reach) for b in reach}
    dom[rpo[0]] = {rpo[0]}
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = set.intersection(*(dom[p] for p in preds[b] if p in reach)) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


@pytest.mark.parametrize("seed", range(400))
def test_dominator_tree_matches_the_definitions(seed):
    fn = _random_function(seed)
    rpo = _reference_rpo(fn)
    dom = DomTree(fn)
    assert dom.rpo == rpo
    assert dom.index == {b: i for i, b in enumerate(rpo)}
    sets = _reference_dominators(fn, rpo)
    idom = {rpo[0]: None}
    for b in rpo[1:]:
        strict = sets[b] - {b}
        idom[b] = max(strict, key=lambda d: len(sets[d]))   # the nearest: most dominators
    assert dom.idom == idom
    assert dom.children == {d: [b for b in rpo[1:] if idom[b] is d] for d in rpo}
    for a in rpo:
        for b in rpo:
            assert dom.dominates(a, b) == (a in sets[b])
    index = dom.index
    retreating = [(index[p], i) for i, b in enumerate(rpo) if i
                  for p in dom.preds[b] if p in index and index[p] >= i]
    into_entry = [(index[p], 0) for p in dom.preds[rpo[0]] if p in index]
    reducible = all(rpo[i] in sets[rpo[j]] for j, i in retreating)
    assert dom.back_edges == (retreating + into_entry if reducible else None)
    assert dom.cyclic == bool(retreating or into_entry)
    # loops: one per header, its latches the in-loop predecessors dominated by it
    li = LoopInfo(fn, dom)
    latches = sorted((t.name, b.name) for b in rpo for t in _succ(b) if t in sets[b])
    assert sorted((t.name, lp.header.name) for lp in li.loops for t in lp.latches) == \
        sorted((b, t) for t, b in latches)
    for lp in li.loops:
        assert lp.blocks == [b for b in rpo if b in lp.block_set]
        assert all(lp.header in sets[b] for b in lp.blocks)
