"""fmt(fmt(x)) == fmt(x) on every .mettle file and documentation block, as written and with
its indentation removed (once the repository is formatted, the dedented copy keeps the
re-indenting paths under test)."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.fmt import format_source

from .corpus import REPO, corpus, dedent, mettle_files, syntax_error_examples

CASES = corpus()


def test_corpus_covers_the_repository():
    names = {name for name, _ in CASES}
    assert "std/io.mettle" in names and "std/gpu_driver.mettle" in names
    assert any(name.startswith("docs/") for name in names)
    assert len(mettle_files()) >= 20


@pytest.mark.parametrize("name, source", CASES, ids=[n for n, _ in CASES])
def test_formatting_is_idempotent(name, source):
    once = format_source(source, name)
    assert format_source(once, name) == once
    settled = format_source(dedent(source), name)
    assert format_source(settled, name) == settled


@pytest.mark.parametrize("path", syntax_error_examples(), ids=lambda p: p.name)
def test_syntax_error_examples_are_refused_with_their_code(path):
    """Left out of the corpus: the formatter reports their error (E0001.mettle: E0001)."""
    with pytest.raises(CompileError) as e:
        format_source(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert e.value.diagnostics[0].code == path.stem
