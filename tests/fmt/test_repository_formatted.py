"""The repository's own Mettle is in the canonical style (what `./pants lint ::` checks with
`mettle fmt --check`). After editing .mettle files, run
`python3 -m toolchain.compiler fmt $(git ls-files '*.mettle')`."""
from __future__ import annotations

import pytest

from toolchain.compiler.fmt import format_source

from .corpus import REPO, mettle_files

FILES = [str(p.relative_to(REPO)) for p in mettle_files()]


@pytest.mark.parametrize("rel", FILES)
def test_file_is_formatted(rel):
    source = (REPO / rel).read_text(encoding="utf-8")
    assert format_source(source, rel) == source, \
        f"run: python3 -m toolchain.compiler fmt {rel}"
