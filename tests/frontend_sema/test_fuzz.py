"""Mutation fuzzing of the whole frontend seam: every input compiles or raises CompileError.

Mutations (seeded, deterministic) delete, duplicate or swap lines and words of the fixture
programs, or splice in tokens that stress the checker. Any other exception, or an internal
error diagnostic (E0900), is a bug.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = DATA.parents[1]
SOURCES = sorted((DATA / "kernels").glob("*.mettle")) + [
    DATA / "frontend_sema" / "host_program.mettle",
    REPO / "examples" / "attention" / "attention.mettle"]         # tile values
SPLICE = ["0", "1.5", "&", "*", "(int64*)", "thread.x", "barrier();", "return;", "break;",
          "\"s\"", "p", "[1, 2]", "atomic_load(p, 0)", "subgroup_any(1)", "true", "-"]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    kind = rng.randrange(4)
    i = rng.randrange(len(lines))
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif kind == 2:
        words = lines[i].split(" ")
        j = rng.randrange(len(words))
        words[j] = rng.choice(SPLICE)
        lines[i] = " ".join(words)
    else:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@pytest.mark.parametrize("path", SOURCES, ids=[p.stem for p in SOURCES])
def test_mutants_compile_or_fail_cleanly(path):
    rng = random.Random(path.stem)
    base = path.read_text()
    outcomes = set()
    for n in range(60):
        src = mutate(mutate(base, rng), rng)
        gpu = "kernel" in src and n % 2 == 0
        # as the PTX command compiles it (tiles in registers): every other GPU mutant, and
        # every one of a program with tile values
        fast = gpu and (n % 4 == 0 or "tile<" in base)
        try:
            compile_to_ir(path.name, gpu=gpu, source_text=src, tile_mma=fast,
                          device_target="ptx" if fast else None)
            outcomes.add("ok")
        except CompileError as e:
            codes = [d.code for d in e.diagnostics]
            assert "E0900" not in codes, (src, [d.message for d in e.diagnostics])
            assert e.diagnostics and all(d.span is not None for d in e.diagnostics
                                         if d.code != "E0401"), codes
            outcomes.add("error")
    assert "error" in outcomes      # the mutator really produces bad programs
