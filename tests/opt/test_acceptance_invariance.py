"""Acceptance never depends on -O (docs/reference/uniformity.md): every GPU source of the
repository (kernel .mettle files under app, bench, examples, std, tests; ```mettle kernel
examples of docs/; and the kernel sources written inline in the tests) compiles with and
without -O, to PTX and to SPIR-V, with the same verdict and the same diagnostic codes.
Also the uniformity derivations through locals the invariance needs, in both directions."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

ROOT = Path(__file__).resolve().parents[2]
KERNEL = re.compile(r"^\s*(@\w+!?\s+)*(export\s+)?kernel\b", re.M)
FENCE = re.compile(r"^```mettle([^\n]*)\n(.*?)^```", re.M | re.S)
FILE_DIRS = ("app", "bench", "examples", "std", "tests")


def _sources() -> list[tuple[str, Path, str | None]]:
    """(id, path, inline text or None for a file compiled in place)."""
    out = []
    for d in FILE_DIRS:
        for p in sorted((ROOT / d).rglob("*.mettle")):
            if KERNEL.search(p.read_text(encoding="utf-8", errors="replace")):
                out.append((str(p.relative_to(ROOT)), p, None))
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if KERNEL.search(m.group(2)) and "fragment" not in m.group(1).split():
                line = text.count("\n", 0, m.start()) + 1
                name = f"{doc.relative_to(ROOT)}:{line}"
                out.append((name, doc.with_suffix(f".{line}.mettle"), m.group(2)))
    for py in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    "{" in node.value and KERNEL.search(node.value):
                name = f"{py.relative_to(ROOT)}:{node.lineno}"
                out.append((name, py.with_suffix(f".{node.lineno}.mettle"), node.value))
    return out


SOURCES = _sources()


def _verdict(path: Path, text: str | None, emit: str, optimize: bool):
    try:
        compile_file(str(path), Options(emit=emit, optimize=optimize), source_text=text)
        return "accepted"
    except CompileError as e:
        return tuple(sorted({d.code for d in e.diagnostics if d.severity == "error"}))


def test_the_corpus_is_not_empty():
    kinds = {("file" if t is None else "inline") for _, _, t in SOURCES}
    assert len(SOURCES) > 60 and kinds == {"file", "inline"}


@pytest.mark.parametrize("emit", ["ptx", "spirv"])
@pytest.mark.parametrize("name,path,text", SOURCES, ids=[s[0] for s in SOURCES])
def test_minus_O_gives_the_same_verdict(name, path, text, emit):
    plain = _verdict(path, text, emit, False)
    assert _verdict(path, text, emit, True) == plain, f"{name} ({emit})"


SUBGROUP_BODY = """kernel(block = {block}) k(x: uint32*, out: uint32*) {{
    var s: uint32 = 0;
    var t: int32 = thread.x;
    {pre}
    if ({cond}) {{ s = subgroup_reduce_add(x[t]); }}
    out[t] = s;
}}
"""
UNIFORM = [  # (block, statements before, condition): uniform per subgroup
    ("128", "var warp: int32 = t / 32;", "warp < 2"),
    ("128", "", "(t >> 5) < 2"),
    ("128", "", "t / 32 < 2"),
    ("128", "var u: int64 = (int64)t; var w: int64 = u / 64;", "w == 0"),
    ("(64, 2, 1)", "var c: int32 = t; var w: int32 = c >> 6;", "w == 0"),
    ("128", "var n: uint32 = subgroup_size() * 2; var w: uint32 = (uint32)t / n;", "w == 1"),
    ("(8, 16, 1)", "var r: int32 = (int32)thread.y; var w: int32 = r / 32;", "w == 0"),
    ("(12, 40, 2)", "", "((int32)thread.y >> 5) == 0"),          # X*Y = 480, a multiple
    ("(48, 8, 2)", "var r: uint32 = thread.y / 64;", "r == 0"),    # Y <= 32
    ("(4, 4, 64)", "var q: int32 = (int32)thread.z;", "q / 32 == 1"),
]
VARYING = [  # the same shapes where the spec's rules do not make the value uniform
    ("128", "", "t < 2"),
    ("128", "var warp: int32 = t / 16;", "warp < 2"),
    ("(48, 2, 1)", "var warp: int32 = t / 32;", "warp < 1"),          # rows not whole warps
    ("128", "var c: int32 = t; if (x[t] == 0) { c = 5; } var w: int32 = c / 32;", "w < 1"),
    ("128", "var w: int32 = 0; if (t < 5) { w = 1; }", "w == 0"),   # chosen under varying
    ("128", "var c: int8 = (int8)t; var w: int8 = c / 32;", "w < 1"),   # may wrap negative
    ("(4, 36, 2)", "var w: int32 = (int32)thread.y / 32;", "w == 0"),   # y wraps mid-warp
    ("(4, 4, 64)", "var q: int32 = (int32)thread.z / 16;", "q == 1"),   # not a whole warp
    ("(8, 16, 1)", "var r: int32 = (int32)thread.y;", "r == 0"),        # y alone varies
]


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("emit", ["ptx", "spirv"])
@pytest.mark.parametrize("block,pre,cond", UNIFORM)
def test_subgroup_index_derivations_survive_locals(tmp_path, block, pre, cond, emit,
                                                   optimize):
    src = SUBGROUP_BODY.format(block=block, pre=pre, cond=cond)
    assert _verdict(tmp_path / "k.mettle", src, emit, optimize) == "accepted"


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("block,pre,cond", VARYING)
def test_varying_control_stays_refused(tmp_path, block, pre, cond, optimize):
    src = SUBGROUP_BODY.format(block=block, pre=pre, cond=cond)
    assert _verdict(tmp_path / "k.mettle", src, "ptx", optimize) == ("E0411",)


@pytest.mark.parametrize("optimize", [False, True])
def test_a_collective_minus_O_would_delete_is_still_judged(tmp_path, optimize):
    src = SUBGROUP_BODY.format(block="128", pre="", cond="t < 5").replace(
        "out[t] = s;", "out[t] = 0;")
    assert _verdict(tmp_path / "k.mettle", src, "ptx", optimize) == ("E0411",)
