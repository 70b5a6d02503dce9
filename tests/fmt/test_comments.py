"""Every comment survives formatting, text unchanged and in order, on the whole corpus and
on comment placements chosen to be awkward. The comments are found by a scanner written
here, independent of the formatter's own."""
from __future__ import annotations

import pytest

from toolchain.compiler.fmt import format_source

from .corpus import corpus

CASES = corpus()


def comments(text: str) -> list[str]:
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] in "\"'":
            quote, i = text[i], i + 1
            while i < n and text[i] != quote:
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(text[i:end].rstrip())
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(text[i:j])
            i = j
        else:
            i += 1
    return out


def test_the_scanner_finds_comments_and_skips_strings():
    assert comments('x = "//no"; // yes\n/* a /* b */ c */ y = \'/\';') == [
        "// yes", "/* a /* b */ c */"]


@pytest.mark.parametrize("name, source", CASES, ids=[n for n, _ in CASES])
def test_every_comment_is_kept_in_order(name, source):
    assert comments(format_source(source, name)) == comments(source)


AWKWARD = """\
/* file header
   spanning lines */
import "std/io"; // why io
fn /* before name */ f(a: int32, /* mid */ b: int32) -> int32 { // after brace
    // leading
    var x: int32 = a + // after plus
        b;
    if (x > 0) { // then
        x = 1;
    } // after then
    // between
    else { x = 2; /* inline */ }
    g(x, // after comma
      /* own */ x);
    h(/* only a comment */);
    var call: fn(int32, int32
        // in a function-pointer type
        ) -> int32 = (fn(int32, int32) -> int32)x;
    return x; // done
    // end of block
} // after fn
// end of file
"""


def test_awkward_comment_placements():
    out = format_source(AWKWARD, "awkward.mettle")
    assert comments(out) == comments(AWKWARD)
    assert format_source(out, "awkward.mettle") == out
    assert "    // end of block\n} // after fn\n// end of file\n" in out
    assert "/* file header\n   spanning lines */\n" in out
