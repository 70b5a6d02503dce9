"""Smoke test: the shared diagnostics module imports and renders a located error."""
from toolchain.compiler.diagnostics import SourceMap, Span, error, render_text


def test_renders_located_error_with_snippet_and_caret():
    sources = SourceMap()
    sources.add("k.mettle", "fn main() {\n    let x = y;\n}\n")
    exc = error("E0101", "unknown name `y`", Span("k.mettle", 2, 13), help="declare `y`")
    (diag,) = exc.diagnostics
    lines = render_text(diag, sources).splitlines()
    assert lines[0] == "error[E0101]: unknown name `y`"
    assert lines[1] == " --> k.mettle:2:13"
    assert lines[3] == "2 |     let x = y;"
    assert lines[4].index("^") == lines[3].index("y")
    assert lines[-1] == "help: declare `y`"
