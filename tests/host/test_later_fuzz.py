"""Generated later-tier programs (tests/host/later_programs.py), half of them also mutated
line by line, built plain and with -O by the whole CLI in process: each either builds or
fails with located diagnostics (never E0900 or a traceback); what builds runs on this
machine without a signal, and its -O build prints the same output and status. A failed
run-time check (status 1) is an answer too: it must say where."""
from __future__ import annotations

import contextlib
import io
import json
import random
import re
import subprocess

import pytest

from tests.frontend_sema.test_fuzz import mutate
from toolchain.compiler import cli

from .cross import skip_unless_runnable
from .later_programs import generate

SEEDS = range(96)
CHECK_LINE = re.compile(r"^p\.mettle:\d+:\d+: [a-z ]+")


def build(tmp_path, src: str, *flags: str):
    """(status, diagnostics) of `--build` in process, diagnostics as JSON."""
    (tmp_path / "p.mettle").write_text(src)
    err = io.StringIO()
    out = tmp_path / ("p" + "".join(flags))
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["--build", *flags, str(tmp_path / "p.mettle"), "-o", str(out),
                       "--error-format=json"])
    text = err.getvalue()
    diags = json.loads(text)["diagnostics"] if text.strip() else []
    return rc, diags, out


def run(exe):
    r = subprocess.run([str(exe)], capture_output=True, timeout=30)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}"
    if r.returncode == 1 and r.stderr:
        assert CHECK_LINE.match(r.stderr.decode()), r.stderr
    return r.returncode, r.stdout


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_programs_build_or_fail_cleanly(tmp_path, seed):
    skip_unless_runnable("x86_64-linux")
    src = generate(seed)
    rng = random.Random(seed)
    if seed % 2:
        src = mutate(src, rng)
    rc, diags, exe = build(tmp_path, src)
    if rc != 0:
        assert rc == 1 and diags, (rc, src)
        assert all(d["code"] != "E0900" and "line" in d for d in diags), (diags, src)
        return
    plain = run(exe)
    rc, diags, exe_o = build(tmp_path, src, "-O")
    assert rc == 0, (diags, src)
    optimized = run(exe_o)
    if optimized != plain and run(exe) != plain:
        return                          # the program prints an address: not deterministic
    assert optimized == plain, src


def test_the_generator_reaches_both_outcomes(tmp_path):
    # a generator that only produced broken (or only valid) programs would test little
    outcomes = {build(tmp_path, generate(seed))[0] for seed in SEEDS[:16]}
    assert outcomes == {0, 1}
