"""The strict GB10 gate (Pants target //tests/rules:gb10, tag `gb10`).

`METTLE_REQUIRE_GB10=1 ./pants --tag=gb10 test ::` refuses to pass unless this runs natively
on AArch64 with an integrated compute-12.1 device, and then runs the hardware suite, which
must pass. Without METTLE_REQUIRE_GB10=1 the gate itself is skipped (so `./pants test ::`
stays green on other machines); the decision rules are checked everywhere.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.rules.gb10_gate import Host, probe_host, refusal
from tools.remote.checkouts import source_root

SPARK = Host("aarch64", None, (12, 1), True)


@pytest.mark.parametrize("host, why", [
    (Host("x86_64", None, (12, 1), True), "not native AArch64"),
    (Host("aarch64", "no libcuda.so.1"), "no usable CUDA device"),
    (Host("aarch64", None, (9, 0), False), "not 12.1"),
    (Host("aarch64", None, (12, 1), False), "not integrated"),
])
def test_gate_refuses_anything_but_a_spark(host, why):
    assert why in refusal(host)


def test_gate_accepts_a_spark():
    assert refusal(SPARK) is None


@pytest.mark.gb10
@pytest.mark.skipif(os.environ.get("METTLE_REQUIRE_GB10") != "1",
                    reason="strict gate: METTLE_REQUIRE_GB10=1 ./pants --tag=gb10 test ::")
def test_strict_gb10_gate():
    why = refusal(probe_host())
    if why is not None:
        pytest.fail(f"GB10 gate refuses to pass: {why}")
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/gpu", "-q", "-rs"],
                          cwd=source_root(), capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " skipped" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]
