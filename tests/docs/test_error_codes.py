"""docs/reference/errors.md is generated from the compiler's code table and the examples in
tools/docs/error_examples/: every code has its explanation and an example that raises it
(or a paragraph saying why no program can), and the page shows what the compiler prints.
METTLE_BLESS=1 rewrites a stale page."""
from __future__ import annotations

import os

import pytest

from tools.docs import gen_errors
from toolchain.compiler.diagnostic_codes import CODES

# Codes without a source example (CODE.txt says why): compiler-bug reports (E0400, E0605,
# E0900), IR-verifier twins of checks the frontend makes first (E0403, E0406, E0407, E0423,
# E0424, E0514), a recursion fallback (E0091), a multi-object link (E0602), E0313, and the
# formatter's two codes, which `mettle fmt` raises and no compile does (E0095: syntax its
# printer lacks; E0096: its own output would change the program, a formatter bug). A new
# code gets an example unless it is one of these kinds. (E0323 has one since barrier
# arguments are checked as E0323 in the parser.)
MOST_WITHOUT_EXAMPLE = 14


def test_every_code_has_an_example_and_no_example_is_stray():
    names = {p.stem for p in gen_errors.EXAMPLES.iterdir()}
    assert sorted(set(CODES) - names) == [], "add tools/docs/error_examples/CODE.mettle"
    assert sorted(names - set(CODES)) == []
    without = sorted(p.stem for p in gen_errors.EXAMPLES.glob("*.txt"))
    assert len(without) <= MOST_WITHOUT_EXAMPLE, without
    assert not [c for c in without if (gen_errors.EXAMPLES / f"{c}.mettle").exists()]


def test_the_page_is_generated_from_the_table():
    page = gen_errors.generate()       # raises when an example does not raise its code
    if gen_errors.PAGE.read_text(encoding="utf-8") != page:
        if os.environ.get("METTLE_BLESS") != "1":
            pytest.fail("docs/reference/errors.md is stale: python3 tools/docs/gen_errors.py")
        gen_errors.PAGE.write_text(page, encoding="utf-8")
    for code, (title, _) in CODES.items():
        assert f"## {code}: {title}\n" in page
