"""Lexer behaviour for every rule of LANGUAGE §1."""

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.lexer import tokenize
from toolchain.compiler.frontend.tokens import FLOAT, IDENT, INT, OPERATORS, STRING


def kinds(src):
    return [(t.kind, t.value) for t in tokenize(src)[:-1]]


def lex_error(src):
    with pytest.raises(CompileError) as ei:
        tokenize(src, "f.mettle")
    d = ei.value.diagnostics[0]
    assert d.code == "E0001"
    return d


def test_bom_is_skipped_and_columns_start_after_it():
    toks = tokenize("\ufeffvar x")
    assert toks[0].kind == "var" and toks[0].col == 1


@pytest.mark.parametrize("src,value", [
    ("007", 7), ("0x1E", 30), ("0X1e", 30), ("0b101", 5), ("0B1", 1), ("42", 42),
])
def test_integer_literals(src, value):
    assert kinds(src) == [(INT, value)]


@pytest.mark.parametrize("src,value", [("1.5", 1.5), ("1e3", 1000.0), ("2.5E-2", 0.025)])
def test_float_literals(src, value):
    assert kinds(src) == [(FLOAT, value)]


def test_range_is_not_a_float():
    assert kinds("1..5") == [(INT, 1), ("..", ".."), (INT, 5)]


@pytest.mark.parametrize("src", ["1u", "2.0f", "1L", "1_000", "0x", "0b2", "1e"])
def test_suffixes_and_separators_are_errors(src):
    d = lex_error(src)
    assert (d.span.line, d.span.col) == (1, 1)


def test_minus_is_always_an_operator():
    assert kinds("-1") == [("-", "-"), (INT, 1)]


@pytest.mark.parametrize("src,value", [
    ("'A'", 65), (r"'\n'", 10), (r"'\t'", 9), (r"'\r'", 13), (r"'\\'", 92), (r"'\''", 39),
    (r"'\0'", 0),
])
def test_char_literals_are_ints(src, value):
    assert kinds(src) == [(INT, value)]


@pytest.mark.parametrize("src", [r"'\q'", "''", "'ab'", "'é'", "'a"])
def test_bad_char_literals(src):
    lex_error("x " + src)


def test_string_escapes_and_unknown_escape_keeps_both():
    assert kinds(r'"a\n\t\r\\\"\0\q"') == [(STRING, b'a\n\t\r\\"\0\\q')]


def test_string_raw_newline_and_following_line_numbers():
    toks = tokenize('"a\nb" x')
    assert toks[0].value == b"a\nb"
    assert (toks[1].line, toks[1].col) == (2, 4)


def test_unterminated_string():
    d = lex_error('x = "abc')
    assert (d.span.line, d.span.col) == (1, 5)


def test_comments_nest():
    assert kinds("a /* x /* y */ z */ b // c\nd") == [(IDENT, "a"), (IDENT, "b"), (IDENT, "d")]


def test_unclosed_nested_comment_is_e0001_at_its_start():
    d = lex_error("a\n  /* x /* y */")
    assert (d.span.line, d.span.col) == (2, 3)


def test_newline_flag_counts_comment_newlines():
    toks = tokenize("a /* \n */ b c")
    assert [t.nl_before for t in toks[:3]] == [True, True, False]


@pytest.mark.parametrize("op", OPERATORS)
def test_every_operator(op):
    assert kinds(f"a {op} b")[1] == (op, op)


def test_no_c_only_operators():
    assert [k for k, _ in kinds("a++ d::e f=>g")] == [
        IDENT, "+", "+", IDENT, ":", ":", IDENT, IDENT, "=", ">", IDENT]
    d = lex_error("a ? b")
    assert (d.span.col, d.message) == (3, "unexpected character '?'")


def test_reserved_words_and_builtin_names():
    assert [k for k, _ in kinds("fn kernel workgroup int32 string bool thread rax")] == [
        "fn", "kernel", "workgroup", "int32", "string", IDENT, IDENT, IDENT]


def test_non_ascii_identifier_is_an_error_with_location():
    d = lex_error("var\n  é = 1")
    assert (d.span.line, d.span.col) == (2, 3)


def test_spans_have_line_col_length():
    t = tokenize("x\n   <<= 3")[1]
    assert (t.span.line, t.span.col, t.span.length, t.span.file) == (2, 4, 3, "<input>")


def test_several_errors_reported_in_one_run():
    with pytest.raises(CompileError) as ei:
        tokenize("1u $ 2x")
    assert len(ei.value.diagnostics) == 3
