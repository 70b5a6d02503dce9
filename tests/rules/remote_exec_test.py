"""The remote-execution demonstration passes (tools/remote/exec_demo.py): BuildGrid on
loopback with two test workers, `plain` (gpu=none) and `gpu` (gpu=sm_90a, recording instead
of running the hardware tests); from clean clone A `./pants package //app:host` executes every
Mettle action on `plain` and `./pants --tag=gpu test tests/gpu::` sends the hardware tests to
`gpu` only; the outputs equal a local replay of the same commands; clean clone B gets every
Mettle action from the remote cache.

Skipped (with the reason) without BuildGrid (tools/bootstrap/40-buildgrid.sh) or its
PostgreSQL + driver (tools/bootstrap/45-buildgrid-execution.sh); ./pants runs both before a
test goal.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.rules.pants_harness import has_bootstrapped_pants, source_root
from tools.remote.grid import postgres_bindir

ROOT = source_root()
BGD = ROOT / ".bootstrap" / "buildgrid" / "bin" / "bgd"
DRIVER = ROOT / ".bootstrap" / "buildgrid-pg"


@pytest.mark.skipif(not BGD.is_file(), reason="BuildGrid missing: tools/bootstrap/40-buildgrid.sh")
@pytest.mark.skipif(not DRIVER.is_dir() or postgres_bindir() is None,
                    reason="PostgreSQL or psycopg2 missing: "
                    "tools/bootstrap/45-buildgrid-execution.sh")
@pytest.mark.skipif(not has_bootstrapped_pants(ROOT), reason="Pants is not bootstrapped")
def test_actions_execute_on_matching_workers_and_a_second_clone_hits_the_cache(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools/remote/exec_demo.py"), "--bgd", str(BGD),
         "--work", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=1500)
    print(proc.stdout)  # the numbers: `./pants test tests/rules/remote_exec_test.py -- -s`
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    out = proc.stdout
    assert "PASS: Mettle actions executed on the plain worker" in out
    for action in ("Run mettle compile app/kernels.mettle -> kernels.ptx (sm_90a)",
                   "Run ptxas --gpu-name=sm_90a kernels.ptx",
                   "Run mettle build app/host.mettle -> host"):
        assert f"A: {action} -> executed on plain" in out, out
    assert "app/host: remote sha256" in out and "local identical; B identical" in out


def test_the_demo_runs_exactly_the_documented_command():
    """The deployment page's command is what exec_demo (above) runs: the committed config
    carries every other setting, so nothing beyond the two addresses is passed."""
    from tools.remote.exec_demo import remote_flags

    class Fake:
        address = "grpc://HOST:PORT"
    page = (ROOT / "docs/reference/remote-execution.md").read_text()
    fence = page.split("## The documented command", 1)[1].split("```sh", 1)[1]
    block = fence.split("\n", 1)[1].split("```")[0]  # past the info string (covered-by=...)
    documented = block.replace("\\\n", " ").split()
    assert documented == ["./pants", *remote_flags(Fake()), "package", "//app:host"]
