"""simplify-cfg's later rounds: a substituted phi value that makes a branch constant is
folded in the next round (its predecessor scan hands over to the folding walk), and one
that makes another phi trivial is replaced there with the predecessor map kept."""
from __future__ import annotations

from toolchain.compiler.ir.printer import format_function
from toolchain.compiler.ir.reader import parse_function
from toolchain.compiler.opt import simplify_cfg
from toolchain.compiler.opt.analyses import Analyses

# m merges into x and its phi becomes `true`: the next round folds m's branch, deletes e,
# and the rounds after merge the straight line left behind into x
FOLD_LATER = """
function @f(%a: i32, %c: bool) -> i32 {
entry:
  cbr %c, x, y
x:
  br m
y:
  ret %a
m:
  %p = phi bool [true:bool, x]
  cbr %p, t, e
t:
  br out
e:
  br out
out:
  %r = phi i32 [1:i32, t], [2:i32, e]
  cbr %c, z, z
z:
  %w = phi i32 [%r, out], [%r, out]
  br fin
fin:
  ret %w
}
"""

# %k2 is trivial in the first round; replacing it makes %k trivial in the second
PHI_LATER = """
function @f(%a: i32, %c: bool) -> i32 {
entry:
  br h
h:
  %i = phi i32 [0:i32, entry], [%j, l]
  %k = phi bool [%c, entry], [%k2, l]
  cbr %k, l, out
l:
  %k2 = phi bool [%k, h]
  %j = add i32 %i, 1:i32
  br h
out:
  ret %i
}
"""


def _run(text: str) -> str:
    fn = parse_function(text)
    assert simplify_cfg.run(fn, Analyses(fn))
    return format_function(fn)


def test_a_branch_made_constant_folds_in_a_later_round():
    assert _run(FOLD_LATER).split("\n")[1:] == [
        "entry:", "  cbr %c, x, y", "x:", "  ret 1:i32", "y:", "  ret %a", "}"]


def test_a_phi_made_trivial_goes_in_a_later_round():
    out = _run(PHI_LATER)
    assert "phi bool" not in out and "cbr %c, l, out" in out
    assert out.count("phi") == 1
