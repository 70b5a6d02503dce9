"""The diagnostic bag (toolchain/compiler/diagnostics.py): an identical diagnostic is kept
once, its error count follows what it holds, and a speculative attempt's reports can be
withdrawn and then reported again for real."""
from __future__ import annotations

from toolchain.compiler.diagnostics import DiagnosticBag, Span, closest, did_you_mean

AT = Span("k.mettle", 3, 5, 2)


def test_the_same_message_at_the_same_place_is_kept_once():
    bag = DiagnosticBag()
    bag.error("E0102", "unknown type `float`", AT)
    bag.error("E0102", "unknown type `float`", AT)
    bag.error("E0102", "unknown type `float`", Span("k.mettle", 4, 5, 2))
    bag.warning("W0001", "unreachable statement", AT)
    assert [(d.code, d.span.line) for d in bag.items] == [
        ("E0102", 3), ("E0102", 4), ("W0001", 3)]
    assert bag.error_count == 2


def test_a_rolled_back_report_can_be_made_again():
    # the tile planner resolves a type quietly (mark, rollback); the lowering then reports
    # the same error, which the duplicate filter must not swallow
    bag = DiagnosticBag()
    bag.error("E0101", "undefined name `x`", AT)
    mark = bag.mark()
    bag.error("E0350", "tile rows must be ...", AT)
    bag.rollback(mark)
    assert [d.code for d in bag.items] == ["E0101"] and bag.error_count == 1
    bag.error("E0350", "tile rows must be ...", AT)
    assert [d.code for d in bag.items] == ["E0101", "E0350"] and bag.error_count == 2


def test_suggestions():
    assert did_you_mean(closest("coutn", ["count", "zzz"])) == "did you mean `count`?"
    assert did_you_mean(["a", "b", "c"]) == "did you mean `a`, `b` or `c`?"
    assert did_you_mean(closest("qqq", ["count"])) is None
