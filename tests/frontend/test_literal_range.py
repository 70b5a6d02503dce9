"""Integer literals never wrap (docs/reference/literals.md): one beyond uint64, the widest
integer type, is a located E0005 in any spelling; the largest ones keep their value."""
from __future__ import annotations

import subprocess

import pytest

from tests.host.support import REPO, build, compile_cmd, run


@pytest.mark.parametrize("lit", ["99999999999999999999999", "18446744073709551616",
                                 "0x10000000000000000", "0b1" + "0" * 64])
def test_a_literal_beyond_uint64_is_a_located_error(tmp_path, lit):
    src = tmp_path / "lit.mettle"
    src.write_text(f"fn main() -> int32 {{\n    var x: uint64 = {lit};\n    return 0;\n}}\n")
    r = subprocess.run(compile_cmd("--build", str(src), "-o", str(tmp_path / "lit")),
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "error[E0005]" in r.stderr and f"lit.mettle:2:21" in r.stderr, r.stderr
    assert "^" * len(lit) in r.stderr
    assert not (tmp_path / "lit").exists()


def test_the_largest_literals_keep_their_value(tmp_path):
    exe = build(tmp_path, """
fn main() -> int32 {
    var top: uint64 = 18446744073709551615;
    var hex: uint64 = 0xFFFFFFFFFFFFFFFF;
    var big: int64 = (int64)3000000000;
    if (top != hex) { return 1; }
    if (top / 4294967296 != 4294967295) { return 2; }
    if (big / 1000 != 3000000) { return 3; }
    return 0;
}
""")
    assert run(exe).returncode == 0
