"""Every syntax error is a located diagnostic; recovery reports several per run."""
import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend import parse_source


def diags(src):
    with pytest.raises(CompileError) as ei:
        parse_source(src, "e.mettle")
    return [(d.code, d.span.line, d.span.col) for d in ei.value.diagnostics]


@pytest.mark.parametrize("src,where", [
    ("fn f() { x = y = 1 }", ("E0002", 1, 16)),
    ("var a: int32[N];", ("E0002", 1, 14)),
    ("fn f() { x = 1 y = 2 }", ("E0002", 1, 16)),
    ("fn f() { if a { } }", ("E0002", 1, 13)),
    ("fn f() {\n  x = (1 + \n}", ("E0002", 3, 1)),
    ("fn f( { }", ("E0002", 1, 7)),
    ("fn f() { barrier(workgroup, bogus) }", ("E0323", 1, 29)),
    ("fn f() { barrier(acquire, release) }", ("E0323", 1, 27)),
    ("fn f() { dispatch k[grid: (1,1,1), grid: (1,1,1)](a) }", ("E0002", 1, 36)),
    ("fn f() { dispatch k[size: 3](a) }", ("E0002", 1, 21)),
    ("fn f() { f(order: x, 3) }", ("E0002", 1, 22)),
    ("kernel(block = 1.5) k() { }", ("E0002", 1, 16)),
    ("workgroup var t: int32[4];", ("E0002", 1, 1)),
    ("fn f() { fn g() { } }", ("E0002", 1, 10)),
    ("fn f() { switch (x) { x = 1 } }", ("E0002", 1, 23)),
    ('import "a" if macos;', ("E0002", 1, 15)),
    ("@inline var x: int32;", ("E0002", 1, 9)),
    ("fn f() {", ("E0002", 1, 9)),
    ("}", ("E0002", 1, 1)),
])
def test_syntax_error_locations(src, where):
    assert diags(src)[0] == where


@pytest.mark.parametrize("src,where", [
    ("var x = 1;", ("E0003", 1, 5)),
    ("fn f() { const k = 1 }", ("E0003", 1, 16)),
])
def test_missing_types_are_e0003(src, where):
    assert diags(src) == [where]


def test_import_str_needs_a_string_literal():
    with pytest.raises(CompileError) as ei:
        parse_source("var s: string = import_str 5;", "e.mettle")
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.col) == ("E0002", 28) and "after 'import_str'" in d.message


def test_recovery_reports_errors_from_several_statements_and_items():
    src = ("fn f() {\n  x = = 1\n  y = 2\n  z = )\n}\n"
           "fn g( {\n}\nvar ok: int32 = 1\nfn h() { return ] }\n")
    assert diags(src) == [("E0002", 2, 7), ("E0002", 4, 7), ("E0002", 6, 7),
                          ("E0002", 9, 17)]


def test_error_cap_is_100():
    src = "fn f() {\n" + "x = )\n" * 300 + "}"
    with pytest.raises(CompileError) as ei:
        parse_source(src, "e")
    assert len(ei.value.diagnostics) == 100


def test_lexical_and_syntax_errors_are_reported_together():
    assert diags("fn f() {\n  x = 1u\n  y = = 2\n}") == [("E0001", 2, 7), ("E0002", 3, 7)]


def test_deep_nesting_is_a_located_error_not_a_crash():
    src = "fn f() { x = " + "(" * 5000 + "1" + ")" * 5000 + " }"
    assert diags(src)[0][0] == "E0002"
    assert diags("fn f() " + "{" * 3000 + "}" * 3000)[0][0] == "E0002"
    assert diags("fn f() { x = " + "-" * 5000 + "1 }")[0][0] == "E0002"
