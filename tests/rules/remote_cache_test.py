"""The remote-cache demonstration passes: tools/remote/cache_demo.py starts BuildGrid on
loopback, builds //app:host from checkout A (empty local store, remote cache read+write),
then from checkout B elsewhere (another empty local store), and exits 0 only when B ran no
Mettle action locally, Pants logged a remote cache hit for each, and the outputs match.

Skipped (with the reason) when BuildGrid is not installed: tools/bootstrap/40-buildgrid.sh,
which .ci/run runs, installs it into .bootstrap/buildgrid.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.rules.pants_harness import has_bootstrapped_pants, source_root

ROOT = source_root()
BGD = ROOT / ".bootstrap" / "buildgrid" / "bin" / "bgd"


@pytest.mark.skipif(not BGD.is_file(), reason="BuildGrid missing: tools/bootstrap/40-buildgrid.sh")
@pytest.mark.skipif(not has_bootstrapped_pants(ROOT), reason="Pants is not bootstrapped")
def test_second_checkout_is_served_by_the_remote_cache(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools/remote/cache_demo.py"), "--bgd", str(BGD),
         "--work", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=2000)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "PASS: every Mettle action of checkout B was served by the remote cache" in proc.stdout
    # The demo lists each remote hit of checkout B: the kernel compile, its ptxas check and
    # the host build must all be among them.
    for action in ("Run mettle compile app/kernels.mettle -> kernels.ptx (sm_90a)",
                   "Run ptxas --gpu-name=sm_90a kernels.ptx",
                   "Run mettle build app/host.mettle -> host"):
        assert f"remote cache hit: {action}" in proc.stdout, proc.stdout
