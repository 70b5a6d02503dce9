"""Shared by the kernel difftest tests: the seeds, and the C reference of each generated
kernel, computed with the system C compiler or, where there is none (a GPU machine without
gcc), read back as a hash from data/kernel_refs.json (`METTLE_BLESS=1` rewrites it)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from tools.difftest.kernel_runs import build, first_difference, reference
from tools.difftest.kernels import generate_kernel
from tools.difftest.runner import cc_path

SEEDS = range(0, 12)
# (seed, opt) pairs that hit a known bug owned elsewhere: see test_found_bugs.py
KNOWN: dict[tuple[int, str], str] = {}
REFS = Path(__file__).with_name("data") / "kernel_refs.json"


def digest(values: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, values)).encode()).hexdigest()


def source_digest(case) -> str:
    return hashlib.sha256((case.mettle + case.c).encode()).hexdigest()


def expected(case) -> tuple[list[int] | None, str]:
    """(values, digest) from C when a compiler exists, else (None, the stored digest)."""
    if cc_path() is not None:
        with tempfile.TemporaryDirectory() as d:
            vals = reference(case, d)
        return vals, digest(vals)
    stored = json.loads(REFS.read_text())[str(case.seed)]
    assert stored["source"] == source_digest(case), \
        "the generator changed: rerun with METTLE_BLESS=1 where gcc exists"
    return None, stored["values"]


def random_kernel_failures(kind: str, opt: str, run) -> list[str]:
    """Build every seed's kernel as `kind` at `opt`, `run(case, binary)` it, and describe
    each one whose outputs differ from the C reference."""
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for seed in SEEDS:
            if (seed, opt) in KNOWN:
                continue
            case = generate_kernel(seed)
            want, want_digest = expected(case)
            got = run(case, build(case, d, kind, opt))
            if digest(got) != want_digest:
                diff = first_difference(want, got, case.m) if want else "digest differs"
                failures.append(f"seed {seed} -{opt}: {diff}\n{case.mettle}")
    return failures


def bless() -> None:
    table = {}
    for s in SEEDS:
        case = generate_kernel(s)
        vals, dig = expected(case)
        table[str(s)] = {"source": source_digest(case), "values": dig}
    REFS.parent.mkdir(exist_ok=True)
    REFS.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


if os.environ.get("METTLE_BLESS") == "1" and cc_path() is not None:
    bless()
