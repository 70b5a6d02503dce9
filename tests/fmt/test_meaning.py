"""Formatting never changes meaning: every .mettle file and documentation block compiles to
the same PTX, SPIR-V and object code (or the same diagnostics) before and after formatting,
both in the canonical width and in a narrow one that breaks most lists.

Each file is compiled in a copy of the repository's Mettle tree (so relative imports
resolve), for every output kind; an output kind the file cannot produce must fail with the
same diagnostics. Source positions are ignored: PTX `.loc`/`.file` lines, and the
`file:line:col` of the host run-time check messages (docs/reference/runtime-checks.md).
"""
from __future__ import annotations

import re
import shutil
from types import SimpleNamespace

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.fmt import format_source
from toolchain.compiler.ir import checks

from .corpus import REPO, doc_blocks, mettle_files
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

EMITS = ("ptx", "spirv", "obj")
_POSITIONS = re.compile(rb"^\s*\.(loc|file)\b[^\n]*\n", re.M)
FILES = [str(p.relative_to(REPO)) for p in mettle_files()]
BLOCKS = doc_blocks()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, root / rel)
    for deps in REPO.rglob("mettle.deps"):
        rel = deps.relative_to(REPO)
        if not {".git", "dist"} & set(rel.parts):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(deps, root / rel)
    return root


@pytest.fixture(autouse=True)
def checks_without_positions(monkeypatch):
    """A check's message starts with its `file:line:col`, which formatting moves."""
    real = checks.message_format
    monkeypatch.setattr(checks, "message_format", lambda ins: real(SimpleNamespace(
        op=ins.op, attrs={**ins.attrs, "site": "<site>"})))


def outcomes(path) -> dict:
    out = {}
    for emit in EMITS:
        try:
            data = compile_file(str(path), Options(emit=emit)).data
            out[emit] = ("ok", _POSITIONS.sub(b"", data) if emit == "ptx" else data)
        except CompileError as e:
            out[emit] = ("error", [(d.code, d.message) for d in e.diagnostics])
    return out


def check_variants(path, source: str, name: str) -> int:
    """Compile `source` and its formatted variants at `path`; return how many differed."""
    path.write_text(source, encoding="utf-8")
    before = outcomes(path)
    variants = {format_source(source, name), format_source(source, name, width=40)}
    compiled = 0
    try:
        for text in variants - {source}:
            path.write_text(text, encoding="utf-8")
            after = outcomes(path)
            for emit in EMITS:
                assert after[emit] == before[emit], f"{name}: {emit} output changed"
            compiled += 1
    finally:
        path.write_text(source, encoding="utf-8")
    return compiled


@pytest.mark.parametrize("rel", FILES)
def test_files_compile_the_same_after_formatting(tree, rel):
    source = (REPO / rel).read_text(encoding="utf-8")
    check_variants(tree / rel, source, rel)


@pytest.mark.parametrize("name, source", BLOCKS, ids=[n for n, _ in BLOCKS])
def test_doc_blocks_compile_the_same_after_formatting(tree, name, source):
    path = tree / "doc_blocks" / (re.sub(r"\W", "_", name) + ".mettle")
    path.parent.mkdir(exist_ok=True)
    check_variants(path, source, name)


def test_some_files_produce_each_kind_of_output(tree):
    """Guard against a corpus that only compares identical failures."""
    produced = {emit: 0 for emit in EMITS}
    for rel in ("app/kernels.mettle", "app/host.mettle", "tests/data/kernels/vadd.mettle"):
        for emit, (status, _) in outcomes(tree / rel).items():
            produced[emit] += status == "ok"
    assert all(produced.values()), produced
