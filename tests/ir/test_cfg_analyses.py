"""The optimizer's CFG analyses on IR text: dominators and frontiers, the loop nest,
preheaders, induction variables and trip counts, and the SSA verifier's rejections."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.ir import verify_function
from toolchain.compiler.ir.cfg import (DomTree, LoopInfo, block_predecessors, ensure_preheader,
                                       split_edge)
from toolchain.compiler.ir.reader import parse_function

NESTED = """
function @f(%n: i32, %m: i32) -> i32 {
entry:
  br outer
outer:
  %i = phi i32 [0:i32, entry], [%i2, outer.latch]
  %s = phi i32 [0:i32, entry], [%s2, outer.latch]
  %c = cmp bool %i, %n {pred=lt}
  cbr %c, inner.pre, done
inner.pre:
  br inner
inner:
  %j = phi i32 [0:i32, inner.pre], [%j2, inner]
  %t = phi i32 [%s, inner.pre], [%t2, inner]
  %t2 = add i32 %t, %j
  %j2 = add i32 %j, 1:i32
  %d = cmp bool %j2, 4:i32 {pred=lt}
  cbr %d, inner, outer.latch
outer.latch:
  %s2 = phi i32 [%t2, inner]
  %i2 = add i32 %i, 2:i32
  br outer
done:
  ret %s
}
"""


def blocks(fn):
    return {b.name: b for b in fn.blocks}


def test_dominators_and_frontiers():
    fn = parse_function(NESTED)
    b = blocks(fn)
    dom = DomTree(fn)
    assert dom.idom[b["inner"]] is b["inner.pre"]
    assert dom.idom[b["done"]] is b["outer"]
    assert dom.dominates(b["outer"], b["outer.latch"])
    assert not dom.dominates(b["inner"], b["done"])
    assert dom.strictly_dominates(b["entry"], b["outer"])
    assert dom.frontier[b["outer.latch"]] == [b["outer"]]
    assert set(dom.frontier[b["inner"]]) == {b["inner"], b["outer"]}
    assert dom.preorder()[0] is b["entry"]


def test_loop_nest_exits_and_preheaders():
    fn = parse_function(NESTED)
    b = blocks(fn)
    li = LoopInfo(fn, DomTree(fn))
    outer, inner = sorted(li.loops, key=lambda l: len(l.blocks), reverse=True)
    assert outer.header is b["outer"] and outer.latch is b["outer.latch"]
    assert inner.header is b["inner"] and inner.latch is b["inner"]
    assert inner.parent is outer and outer.children == [inner] and inner.depth == 2
    assert set(outer.blocks) == {b[n] for n in ("outer", "inner.pre", "inner", "outer.latch")}
    assert outer.exits == [b["done"]] and outer.exiting == [b["outer"]]
    assert inner.exits == [b["outer.latch"]]
    assert inner.preheader is b["inner.pre"] and outer.preheader is b["entry"]
    assert li.loop_of[b["inner"]] is inner and li.loop_of[b["inner.pre"]] is outer
    assert li.innermost_first()[0] is inner


def test_trip_counts_and_induction_variables():
    fn = parse_function(NESTED)
    li = LoopInfo(fn, DomTree(fn))
    outer, inner = sorted(li.loops, key=lambda l: len(l.blocks), reverse=True)
    ivs = inner.induction_variables()
    assert [iv.step for iv in ivs] == [1]
    tc = inner.trip_count()
    assert tc is not None and tc.tests_next and tc.pred == "lt" and tc.count == 4
    to = outer.trip_count()
    assert to is not None and to.step == 2 and to.count is None and to.bound is fn.params[0]


@pytest.mark.parametrize("init, pred, bound, step, count", [
    (0, "lt", 10, 1, 10), (0, "le", 10, 3, 4), (10, "gt", 0, -1, 10), (10, "ge", 0, -2, 6),
    (5, "lt", 5, 1, 0), (0, "ne", 8, 2, 4),
])
def test_header_tested_trip_count(init, pred, bound, step, count):
    op, k = ("add", step) if step > 0 else ("sub", -step)
    fn = parse_function(f"""
function @f() -> void {{
entry:
  br head
head:
  %i = phi i32 [{init}:i32, entry], [%n, body]
  %c = cmp bool %i, {bound}:i32 {{pred={pred}}}
  cbr %c, body, done
body:
  %n = {op} i32 %i, {k}:i32
  br head
done:
  ret
}}""")
    lp = LoopInfo(fn, DomTree(fn)).loops[0]
    assert lp.trip_count().count == count


def test_wrapping_loop_has_no_constant_count():
    fn = parse_function("""
function @f() -> void {
entry:
  br head
head:
  %i = phi u8 [250:u8, entry], [%n, head]
  %n = add u8 %i, 1:u8
  %c = cmp bool %n, 255:u8 {pred=le}
  cbr %c, head, done
done:
  ret
}""")
    tc = LoopInfo(fn, DomTree(fn)).loops[0].trip_count()
    assert tc is not None and tc.count is None


def test_ensure_preheader_merges_outside_arms_and_split_edge():
    fn = parse_function("""
function @f(%a: i32, %c: bool) -> i32 {
entry:
  cbr %c, left, head
left:
  br head
head:
  %x = phi i32 [1:i32, entry], [%a, left], [%y, head]
  %y = add i32 %x, 1:i32
  %d = cmp bool %y, 9:i32 {pred=lt}
  cbr %d, head, done
done:
  ret %y
}""")
    li = LoopInfo(fn, DomTree(fn))
    lp = li.loops[0]
    assert lp.preheader is None
    pre, created = ensure_preheader(lp)
    assert created and pre.successors == [blocks(fn)["head"]]
    verify_function(fn, ssa=True)
    phi = blocks(fn)["head"].phis[0]
    assert phi.targets[0] is pre and len(phi.operands) == 2
    assert len(pre.phis) == 1                       # the two outside values meet there
    mid = split_edge(fn, blocks(fn)["head"], blocks(fn)["done"])
    verify_function(fn, ssa=True)
    assert block_predecessors(fn)[blocks(fn)["done"]] == [mid]


BAD = {
    "before its definition": """
function @f(%a: i32) -> i32 {
entry:
  %0 = add i32 %1, 1:i32
  %1 = add i32 %a, 1:i32
  ret %0
}""",
    "does not dominate": """
function @f(%a: i32, %c: bool) -> i32 {
entry:
  cbr %c, then, join
then:
  %0 = add i32 %a, 1:i32
  br join
join:
  ret %0
}""",
    "one arm per predecessor": """
function @f(%a: i32, %c: bool) -> i32 {
entry:
  cbr %c, then, join
then:
  br join
join:
  %0 = phi i32 [%a, entry]
  ret %0
}""",
    "operand and result types differ": """
function @f(%a: i32, %b: i64) -> i32 {
entry:
  %0 = add i32 %a, %b
  ret %0
}""",
    "phi after a non-phi": """
function @f(%a: i32) -> i32 {
entry:
  br next
next:
  %0 = add i32 %a, 1:i32
  %1 = phi i32 [%a, entry]
  ret %1
}""",
}


@pytest.mark.parametrize("why", sorted(BAD))
def test_ssa_verifier_rejects(why):
    fn = parse_function(BAD[why])
    verify_function(fn)                              # structurally fine
    with pytest.raises(CompileError) as e:
        verify_function(fn, ssa=True)
    assert why in str(e.value) and e.value.diagnostics[0].code == "E0400"


def test_builder_makes_phis_at_the_block_head():
    from toolchain.compiler.ir import I32, Builder, Module, format_function
    m = Module("t")
    b = Builder(m)
    fn = b.function("f", [("n", I32)], I32)
    entry, loop, done = (b.append_block(fn, n) for n in ("entry", "loop", "done"))
    b.position_at_end(entry)
    b.br(loop)
    b.position_at_end(loop)
    nxt_placeholder = b.const(I32, 0)
    i = b.phi(I32, [(nxt_placeholder, entry)])
    nxt = b.add(i, b.const(I32, 1))
    s = b.phi(I32, [(b.const(I32, 0), entry)])          # still lands before the add
    b.add_incoming(i, nxt, loop)
    b.add_incoming(s, b.add(s, i), loop)
    b.cbr(b.cmp("lt", nxt, fn.params[0]), loop, done)
    b.position_at_end(done)
    b.ret(s)
    verify_function(fn, ssa=True)
    assert [ins.op for ins in loop.instrs[:3]] == ["phi", "phi", "add"]
    assert "phi i32 [0:i32, entry], [%" in format_function(fn)


def test_ssa_verifier_wants_one_value_per_predecessor_block():
    fn = parse_function("""
function @f(%a: i32, %b: i32, %c: bool) -> i32 {
entry:
  cbr %c, join, join
join:
  %0 = phi i32 [%a, entry], [%b, entry]
  ret %0
}""")
    with pytest.raises(CompileError) as e:
        verify_function(fn, ssa=True)
    assert "two values for the two edges from entry" in str(e.value)


# Irreducible (a two-entry cycle), a self-loop, an edge back into the entry, and nested
# loops: the dominator tree must equal the textbook fixpoint on every one (DomTree takes
# the first RPO pass as final only when every retreating edge is a back edge).
CFGS = {
    "irreducible": """
function @g(%c: bool) -> i32 {
entry:
  cbr %c, a, b
a:
  cbr %c, b, out
b:
  cbr %c, a, out
out:
  ret 0:i32
}
""",
    "self_and_entry": """
function @g(%c: bool) -> i32 {
entry:
  cbr %c, s, out
s:
  cbr %c, s, back
back:
  br entry
out:
  ret 0:i32
}
""",
    # RPO entry, b, a, c, out, x: the first pass misses the path entry-b-x-c into c
    "irreducible_second_entry": """
function @g(%c: bool) -> i32 {
entry:
  cbr %c, a, b
a:
  br c
c:
  cbr %c, x, out
b:
  br x
x:
  br c
out:
  ret 0:i32
}
""",
    "irreducible_inside_loop": """
function @g(%c: bool) -> i32 {
entry:
  br h
h:
  cbr %c, x, y
x:
  cbr %c, y, latch
y:
  cbr %c, x, latch
latch:
  cbr %c, h, out
out:
  ret 0:i32
}
""",
}


def _naive_dominators(fn):
    """Dominator sets by the plain dataflow fixpoint over the reachable blocks."""
    preds = block_predecessors(fn)
    reach, work = {fn.blocks[0]}, [fn.blocks[0]]
    while work:
        for s in work.pop().successors:
            if s not in reach:
                reach.add(s)
                work.append(s)
    dom = {b: set(reach) for b in reach}
    dom[fn.blocks[0]] = {fn.blocks[0]}
    changed = True
    while changed:
        changed = False
        for b in reach - {fn.blocks[0]}:
            new = set.intersection(*(dom[p] for p in preds[b] if p in reach)) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


@pytest.mark.parametrize("name", sorted(CFGS) + ["nested"])
def test_dominator_tree_matches_the_dataflow_fixpoint(name):
    fn = parse_function(NESTED if name == "nested" else CFGS[name])
    naive = _naive_dominators(fn)
    dom = DomTree(fn)
    for b, ds in naive.items():
        assert {a for a in naive if dom.dominates(a, b)} == ds, b.name
    # latches: the edges into a block that dominates their source
    li = LoopInfo(fn, dom)
    want = sorted((s.name, b.name) for b in naive for s in b.successors if s in naive[b])
    assert sorted((lp.header.name, t.name) for lp in li.loops for t in lp.latches) == want
    assert dom.cyclic
    assert (dom.back_edges is None) == name.startswith("irreducible")
