"""simplify-cfg keeps a cached dominator tree through straight-line merges (compile time:
gvn reads it next) and drops it when a branch folds; a kept tree equals a rebuild."""
from __future__ import annotations

from toolchain.compiler.ir.cfg import DomTree, block_predecessors
from toolchain.compiler.ir.reader import parse_function
from toolchain.compiler.opt import simplify_cfg
from toolchain.compiler.opt.analyses import Analyses

# entry -> a -> b (a loop b <-> c, whose latch c goes through a chain c -> d) -> out:
# a, d merge into their predecessors; the loop's back edge then leaves the merged block
CHAINS = """
function @f(%n: i32) -> i32 {
entry:
  br a
a:
  br b
b:
  %i = phi i32 [0:i32, a], [%i2, d]
  %c = cmp bool %i, %n {pred=lt}
  cbr %c, c, out
c:
  %i2 = add i32 %i, 1:i32
  br d
d:
  br b
out:
  ret %i
}
"""

FOLD = """
function @f(%n: i32) -> i32 {
entry:
  cbr true:bool, a, b
a:
  br out
b:
  br out
out:
  %r = phi i32 [1:i32, a], [2:i32, b]
  ret %r
}
"""


def _same_tree(dom: DomTree, fn) -> None:
    fresh = DomTree(fn, block_predecessors(fn))
    assert dom.rpo == fresh.rpo and dom.index == fresh.index
    assert dom.idom == fresh.idom and dom.children == fresh.children
    assert dom.back_edges == fresh.back_edges and dom.cyclic == fresh.cyclic
    assert dom.preds == block_predecessors(fn)
    assert [b.name for b in fresh.preorder()] == [b.name for b in dom.preorder()]
    assert all(dom.frontier[b] == fresh.frontier[b] for b in fresh.rpo)


def test_merges_keep_the_tree_equal_to_a_rebuild():
    fn = parse_function(CHAINS)
    an = Analyses(fn)
    dom = an.get("domtree")
    an.get("loops")
    assert simplify_cfg.run(fn, an)
    assert [b.name for b in fn.blocks] == ["entry", "b", "c", "out"]
    assert an.peek("domtree") is dom and not an.cfg_changed
    assert an.peek("preds") is dom.preds and an.peek("loops") is None
    _same_tree(dom, fn)
    loop, = an.get("loops").loops                   # rebuilt from the kept tree
    assert loop.header.name == "b" and [t.name for t in loop.latches] == ["c"]


def test_a_folded_branch_drops_the_tree():
    fn = parse_function(FOLD)
    an = Analyses(fn)
    an.get("domtree")
    assert simplify_cfg.run(fn, an)
    assert an.cfg_changed
