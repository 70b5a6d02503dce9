"""The formatter refuses rather than guesses: syntax it was not written for (E0095) and any
output that would not be the same program (E0096) leave the input unchanged."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError, Span
from toolchain.compiler.fmt import format, verify
from toolchain.compiler.fmt.command import main
from toolchain.compiler.frontend import ast as A
from toolchain.compiler.frontend import parse_source
from toolchain.compiler.frontend.lexer import tokenize

SRC = "fn f(x: int32) -> int32 {\n    return x * 2;\n}\n"


def test_unknown_node_kinds_are_refused():
    module = parse_source(SRC, "f.mettle")

    class Asm(A.Stmt):            # what a later parser might produce
        pass
    module.items[0].body.stmts.append(Asm(span=Span("f.mettle", 2, 5, 5)))
    diag = verify.unknown_syntax(module, tokenize(SRC, "f.mettle"))
    assert diag is not None and diag.code == "E0095" and diag.span.line == 2


def test_a_field_the_printer_does_not_know_is_refused(monkeypatch):
    src = "fn f() {\n    outer: while (true) { break outer; }\n}\n"
    module = parse_source(src, "f.mettle")
    assert verify.unknown_syntax(module, tokenize(src, "f.mettle")) is None
    known = dict(verify.KNOWN_FIELDS)
    known["While"] = known["While"] - {"label"}     # as if `label` were a new field
    monkeypatch.setattr(verify, "KNOWN_FIELDS", known)
    diag = verify.unknown_syntax(module, tokenize(src, "f.mettle"))
    assert diag.code == "E0095" and "While" in diag.message
    module.items[0].body.stmts[0].label = None       # an unset new field is harmless
    assert verify.unknown_syntax(module, tokenize(src, "f.mettle")) is None


def test_later_tier_fields_are_compared():
    """The output check sees the later tier's fields: a generic call's type arguments, a
    type's arguments, a where-bound, a match arm's binding, errdefer versus defer."""
    src = ("fn g<T>(x: T) -> T where T: Ord { return x; }\n"
           "fn f(m: Maybe<int32>) {\n    g<int32>(1);\n"
           "    match (m) { case Just(v): { defer h(v); } default: {} }\n}\n")
    module = parse_source(src, "f.mettle")
    assert verify.unknown_syntax(module, tokenize(src, "f.mettle")) is None
    changes = [
        lambda m: setattr(m.items[1].body.stmts[0].expr, "type_args", []),
        lambda m: setattr(m.items[1].params[0].type, "args", []),
        lambda m: m.items[0].type_params[0].bounds.append("Hash"),
        lambda m: setattr(m.items[1].body.stmts[1].arms[0], "binding", "w"),
        lambda m: setattr(m.items[1].body.stmts[1].arms[0].body.stmts[0], "is_err", True),
    ]
    for change in changes:
        changed = parse_source(src, "f.mettle")
        change(changed)
        assert verify.dump(changed) != verify.dump(module)


def test_later_tier_words_are_refused():
    src = "fn f() { asm x; }\n"
    tokens = tokenize(src, "f.mettle")
    diag = verify.unknown_syntax(A.Module([], "f.mettle", span=Span("f.mettle", 1, 1)), tokens)
    assert diag.code == "E0095" and diag.span.col == 10


def test_a_node_the_printer_does_not_know_leaves_the_file_unchanged(monkeypatch, tmp_path,
                                                                   capsys):
    known = dict(verify.KNOWN_FIELDS)
    del known["Defer"]                              # as if `defer` were new syntax
    monkeypatch.setattr(verify, "KNOWN_FIELDS", known)
    src = "fn f() {\n  defer g();\n}\n"
    path = tmp_path / "f.mettle"
    path.write_text(src)
    assert main([str(path)]) == 1
    assert "error[E0095]: the formatter cannot print this syntax (Defer) yet" in \
        capsys.readouterr().err
    assert path.read_text() == src


@pytest.mark.parametrize("damage", [
    lambda out: out.replace("x * 2", "x * 3"),              # a token changed
    lambda out: out.replace("return x", "return\nx"),       # same tokens, other statements
    lambda out: out + "// new comment\n",                   # a comment that was not there
])
def test_an_output_that_is_not_the_same_program_is_refused(monkeypatch, tmp_path, damage):
    real = format.render
    monkeypatch.setattr(format, "render", lambda doc, width: damage(real(doc, width)))
    with pytest.raises(CompileError) as e:
        format.format_source(SRC, "f.mettle")
    assert e.value.diagnostics[0].code == "E0096"
    path = tmp_path / "f.mettle"
    path.write_text(SRC.replace("    ", "  "))
    assert main([str(path)]) == 1
    assert path.read_text() == SRC.replace("    ", "  ")


def test_a_formatter_crash_is_reported_not_raised(monkeypatch, tmp_path, capsys):
    def boom(doc, width):
        raise KeyError("oops")
    monkeypatch.setattr(format, "render", boom)
    path = tmp_path / "f.mettle"
    path.write_text(SRC)
    assert main([str(path)]) == 70
    assert capsys.readouterr().err.startswith("error[E0900]: internal formatter error")
    assert path.read_text() == SRC
