"""fmt(fmt(x)) == fmt(x) on every .mettle file and documentation block, as written and with
its indentation removed (once the repository is formatted, the dedented copy keeps the
re-indenting paths under test)."""
from __future__ import annotations

import pytest

from toolchain.compiler.fmt import format_source

from .corpus import corpus, dedent, mettle_files

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
