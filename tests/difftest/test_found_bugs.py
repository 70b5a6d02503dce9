"""Bugs the differential tester found in code this issue does not own, kept as tests that
state the right behaviour. While a bug is open its test is a strict xfail naming the owner:
the day the fix lands, XPASS fails the run and the marker must come off (it cannot rot).
Fixed bugs of the frontend are regression tests in tests/host/test_semantics.py."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.host.support import REPO, compile_cmd
from tests.support import ptxas

DATA = Path(__file__).with_name("data")


def test_random_kernel_seed11_compiles_to_ptx_at_O(tmp_path):
    """Found by `python3 -m tools.difftest --kernels --seeds 11`: -O left a `local.get` of an
    f64 before its definition ("PTX backend: value ... used before its definition"). Fixed
    by the optimizer's owner (issue 18) the same evening; kept as a regression test."""
    out = tmp_path / "k.ptx"
    r = subprocess.run(compile_cmd("--emit-ptx", "-O", "--gpu-arch=sm_90a",
                                   str(DATA / "opt_ptx_use_before_def.mettle"), "-o", str(out)),
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    if ptxas.find_ptxas():
        ptxas.assemble(out.read_text(), "sm_90a")
