"""Whole-pipeline fuzzing: mutated Mettle programs through frontend, verifiers and backends.

The frontend fuzzers (tests/frontend, tests/frontend_sema) stop at the IR. Here every
mutant that the frontend accepts also goes through the shared device verifiers and the PTX
and SPIR-V emitters (kernels) or the x86-64 object emitter (host programs), so a backend
crash on unusual-but-valid IR is caught too. The only acceptable outcomes are success or a
CompileError whose diagnostics are not internal errors (E0900).
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)
import toolchain.compiler.targets.x86_64  # noqa: F401  (compiles host objects: its backend)

DATA = Path(__file__).resolve().parent / "data"
SEEDS = sorted(DATA.glob("kernels/*.mettle")) + sorted(DATA.glob("gpu_suite/*.mettle"))
HOST = sorted(DATA.glob("frontend_sema/*.mettle"))
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:e-?\d+)?'
                   r"|\.\.=?|->|<<=?|>>=?|[<>=!]=|&&|\|\||[-+*/%&|^]=|\S")
COMMENT = re.compile(r"//[^\n]*")
NUMBERS = ["0", "1", "-1", "31", "32", "255", "4294967296", "2.5", "1e30", "0.0"]
TYPES = ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float32",
         "float64", "bool"]
OPERATORS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", "<=", "==", "!=",
             "&&", "||"]
WORDS = ["thread.x", "block.y", "barrier()", "return", "break", "continue", "(", ")", ";",
         "*", "&", "[", "]"]


def _similar(tok: str, idents: list[str], rng: random.Random) -> str:
    """A replacement of the same kind, so many mutants still parse and reach the backends."""
    if tok in TYPES:
        return rng.choice(TYPES)
    if tok[0].isdigit():
        return rng.choice(NUMBERS)
    if tok[0].isalpha() or tok[0] == "_":
        return rng.choice(idents)
    if tok in OPERATORS:
        return rng.choice(OPERATORS)
    return rng.choice(WORDS)


def mutate(text: str, rng: random.Random) -> str:
    """Delete, duplicate, replace or swap 1-3 tokens; lines (statement ends) are kept."""
    lines = [TOKEN.findall(line) for line in COMMENT.sub("", text).splitlines()]
    where = [(i, j) for i, line in enumerate(lines) for j in range(len(line))]
    idents = sorted({t for line in lines for t in line if t[0].isalpha() or t[0] == "_"})
    for _ in range(rng.randint(1, 3)):
        (i, j), (k, l) = rng.choice(where), rng.choice(where)
        if j >= len(lines[i]) or l >= len(lines[k]):
            continue
        kind = rng.choice((0, 1, 2, 3, 4, 4, 4, 4, 4, 4))   # mostly same-kind swaps
        if kind == 4:
            lines[i][j] = _similar(lines[i][j], idents, rng)
        elif kind == 0:
            del lines[i][j]
        elif kind == 1:
            lines[i].insert(j, lines[k][l])
        elif kind == 2:
            lines[i][j] = rng.choice(WORDS + NUMBERS)
        else:
            lines[i][j], lines[k][l] = lines[k][l], lines[i][j]
    return "\n".join(" ".join(line) for line in lines)


def _codes(path: Path, text: str, opts: Options) -> list[str]:
    """The diagnostic codes of one compile ([] when it succeeds)."""
    try:
        compile_file(str(path), opts, source_text=text)
    except CompileError as e:
        internal = [d for d in e.diagnostics if d.code == "E0900"]
        assert not internal, f"internal error on mutant:\n{text}\n{internal[0].message}"
        assert all(d.span is not None or d.code.startswith("E05") or
                   d.code.startswith("E04") for d in e.diagnostics)
        return [d.code for d in e.diagnostics]
    return []


def compile_all_targets(path: Path, text: str, host: bool) -> None:
    kinds = [Options(emit="obj")] if host else \
        [Options(emit="ptx", gpu_arch="sm_90a"), Options(emit="ptx", gpu_arch="portable"),
         Options(emit="spirv")]
    for n, opts in enumerate(kinds):
        codes = _codes(path, text, opts)
        if n == 0 and not host:
            # GPU -O lowers through the frontend's SSA construction: it must accept and
            # refuse exactly what the plain compile does, with the same diagnostics
            opt = Options(emit="ptx", gpu_arch="sm_90a", optimize=True)
            assert _codes(path, text, opt) == codes, f"-O disagrees on mutant:\n{text}"
        if codes:
            return


@pytest.mark.parametrize("seed_file", SEEDS + HOST, ids=lambda p: p.name)
def test_mutants_never_crash_the_pipeline(seed_file):
    rng = random.Random(seed_file.name)
    text = seed_file.read_text()
    host = seed_file in HOST
    for _ in range(120 if not host else 80):
        compile_all_targets(seed_file, mutate(text, rng), host)
