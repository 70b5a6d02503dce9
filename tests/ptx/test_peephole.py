"""Cause 1 of issue 18: negated loop-exit branches become positive branches on the inverse
compare, exactly (unordered float inverses), and ptxas then unrolls the strided loop."""
from __future__ import annotations

import math
import operator

import pytest

from toolchain.compiler.targets.ptx import peephole
from toolchain.compiler.targets.ptx.parse import parse_statement
from toolchain.compiler.targets.ptx.printer import format_instr

from .source import find_nvdisasm, ptx_of, sass

# PTX ISA "Comparison operators": ordered float compares are false on NaN, unordered
# (`u` suffix) ones true; `num`/`nan` test for NaN operands.
_ORD = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
        "gt": operator.gt, "ge": operator.ge}


def _float_cmp(name: str, a: float, b: float) -> bool:
    nan = math.isnan(a) or math.isnan(b)
    if name == "num":
        return not nan
    if name == "nan":
        return nan
    if name.endswith("u") and name[:-1] in _ORD:
        return nan or _ORD[name[:-1]](a, b)
    return not nan and _ORD[name](a, b)


_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def _int_cmp(name: str, a: int, b: int) -> bool:
    return _ORD[_UNSIGNED.get(name, name)](a, b)


FLOATS = [math.nan, -math.inf, -1.5, -0.0, 0.0, 2.0, math.inf]


@pytest.mark.parametrize("cmp", sorted(peephole._FLOAT_INVERSE))
def test_float_inverse_is_the_exact_negation_nan_included(cmp):
    inv, ty = peephole.inverse_compare((cmp, "f32"))
    assert ty == "f32"
    for a in FLOATS:
        for b in FLOATS:
            assert _float_cmp(inv, a, b) == (not _float_cmp(cmp, a, b)), (cmp, inv, a, b)


@pytest.mark.parametrize("cmp", sorted(peephole._INT_INVERSE))
def test_integer_inverse_is_the_exact_negation(cmp):
    inv, _ = peephole.inverse_compare((cmp, "u32" if cmp in _UNSIGNED else "s32"))
    for a in (-3, 0, 1, 7):
        for b in (-3, 0, 1, 7):
            assert _int_cmp(inv, a, b) == (not _int_cmp(cmp, a, b))


def _body(*lines):
    return [parse_statement(s) for s in lines]


def _text(body):
    return [format_instr(i).strip() for i in body]


def test_single_use_negated_branch_is_made_positive():
    body = _body("setp.lt.s32 %p1, %r1, %r2", "$L__BB1:", "add.s32 %r1, %r1, 1",
                 "@!%p1 bra $L__BB3", "$L__BB3:", "ret")
    assert _text(peephole.run(body)) == [
        "setp.ge.s32 %p1, %r1, %r2;", "$L__BB1:", "add.s32 %r1, %r1, 1;",
        "@%p1 bra $L__BB3;", "$L__BB3:", "ret;"]
    assert _text(peephole.run(_body("setp.lt.f32 %p2, %f1, %f2", "@!%p2 bra L")))[0] == \
        "setp.geu.f32 %p2, %f1, %f2;"


@pytest.mark.parametrize("lines", [
    ("setp.lt.s32 %p1, %r1, %r2", "@!%p1 bra L", "selp.b32 %r3, 1, 0, %p1"),   # 2nd use
    ("setp.lt.and.s32 %p1, %r1, %r2, %p2", "@!%p1 bra L"),                     # combining
    ("@%p3 setp.lt.s32 %p1, %r1, %r2", "@!%p1 bra L"),                         # guarded def
    ("setp.lt.s32 %p1, %r1, %r2", "@!%p1 bra.uni L"),                          # tensor form
    ("mov.pred %p1, %p4", "@!%p1 bra L"),                                       # not a setp
    ("setp.lt.s32 %p1, %r1, %r2", "setp.gt.s32 %p1, %r1, %r2", "@!%p1 bra L"),  # two defs
    ("setp.lt.s32 %p1, %r1, %r2", "and.pred %p2, %p3, !%p1", "@!%p1 bra L"),    # `!p` use
    ("setp.lt.s32 %p1, %r1, %r2", "setp.eq.s32 %p4|%p1, %r1, 0", "@!%p1 bra L"),  # `p|q`
])
def test_rewrite_needs_exactly_one_plain_setp_and_one_branch(lines):
    body = _body(*lines)
    assert _text(peephole.run(body)) == _text(body)


def test_not_pred_is_folded_into_the_branch():
    body = _body("setp.lt.s32 %p1, %r1, %r2", "not.pred %p2, %p1", "@!%p2 bra L",
                 "$L__BB1:", "ret")
    assert _text(peephole.run(body)) == ["setp.lt.s32 %p1, %r1, %r2;", "@%p1 bra L;",
                                         "$L__BB1:", "ret;"]
    body = _body("setp.lt.s32 %p1, %r1, %r2", "not.pred %p2, %p1", "@%p2 bra L", "ret")
    assert _text(peephole.run(body)) == ["setp.ge.s32 %p1, %r1, %r2;", "@%p1 bra L;", "ret;"]


@pytest.mark.parametrize("lines", [
    ("not.pred %p2, %p1", "mov.pred %p1, %p3", "@!%p2 bra L"),        # p rewritten between
    ("not.pred %p2, %p1", "$L__BB1:", "@!%p2 bra L"),                  # another block
    ("not.pred %p2, %p1", "@!%p2 bra L", "selp.b32 %r1, 1, 0, %p2"),   # q used again
])
def test_not_pred_stays_when_folding_could_change_meaning(lines):
    body = _body(*lines)
    assert [i.name for i in peephole.fold_not(body)] == [i.name for i in body]


def test_other_negated_branches_become_positive_with_an_explicit_exit():
    body = _body("and.pred %p3, %p1, %p2", "@!%p3 bra $L__BB4", "$L__BB2:", "ret")
    assert _text(peephole.run(body)) == [
        "and.pred %p3, %p1, %p2;", "@%p3 bra $L__BB2;", "bra.uni $L__BB4;", "$L__BB2:",
        "ret;"]


def test_lines_of_the_tensor_lowerings_keep_their_shape():
    body = _body("setp.lt.s32 %p1, %r1, %r2", "@!%p1 bra $L__x", "$L__BB2:", "ret")
    assert _text(peephole.run(body, keep={id(body[1])})) == _text(body)
    assert _text(peephole.run(body, keep={id(body[0])}))[1:3] == [
        "@%p1 bra $L__BB2;", "bra.uni $L__x;"]


ROW_LOOP = """
kernel(block = 128) row_sum(x: float32*, y: float32*, rows: int32, cols: int32) {
  var row: int32 = (int32)(block.x * 4 + thread.x / 32);
  if (row >= rows) { return; }
  var lane: int32 = (int32)subgroup_local_id();
  var width: int32 = (int32)subgroup_size();
  var xr: float32* = x + (int64)row * (int64)cols;
  var s: float32 = 0.0;
  for (var c: int32 = lane; c < cols; c += width) {
    s = s + xr[c];
  }
  s = subgroup_reduce_add(s);
  if (lane == 0) { y[row] = s; }
}
"""

FLOAT_LOOP = """
kernel halve(x: float32*, limit: float32) {
  var v: float32 = x[0];
  while (v > limit) { v = v * 0.5; }
  x[0] = v;
}
"""


def test_loop_exits_branch_on_the_positive_inverse_compare(ptxas):
    text = ptx_of(ROW_LOOP)
    assert not [line for line in text.splitlines()
                if line.strip().startswith("@!%p") and " bra " in line]
    assert "setp.ge.s32" in text and "setp.lt.s32" in text
    ptxas(text, "sm_90a")
    text = ptx_of(FLOAT_LOOP)
    assert "setp.leu.f32" in text and "@!%p" not in text
    ptxas(text, "sm_90a")


def _loads(s: str) -> int:
    return sum(1 for line in s.splitlines() if "LDG.E" in line)


def test_ptxas_unrolls_the_strided_row_loop_only_with_the_positive_exit(ptxas_path,
                                                                         monkeypatch):
    nvdisasm = find_nvdisasm(ptxas_path)
    if nvdisasm is None:
        pytest.skip("nvdisasm unavailable (pip install nvidia-cuda-nvdisasm)")
    unrolled = _loads(sass(ptxas_path, nvdisasm, ptx_of(ROW_LOOP)))
    monkeypatch.setattr(peephole, "run", lambda body, keep=(): body)   # old exits
    rolled = _loads(sass(ptxas_path, nvdisasm, ptx_of(ROW_LOOP)))
    assert rolled == 1 and unrolled >= 4, (rolled, unrolled)
