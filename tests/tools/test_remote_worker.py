"""The test worker's REAPI layer (tools/remote/worker.py, cas.py) against an in-memory CAS:
input roots with nested directories, executables, symlinks and a ByteStream-sized blob are
materialised; outputs (files, directory trees with symlinks, big blobs) come back as an
ActionResult; a failing or escaping action fails, the record-only mode runs nothing it
matches, and an action for another platform (e.g. gpu=sm_90a on a gpu=none worker) is
refused. The checks live in remote_worker_check.py and run on BuildGrid's interpreter
(grpc + protos); skipped when tools/bootstrap/40-buildgrid.sh has not installed it."""
from __future__ import annotations

import subprocess

import pytest

from tools.remote.checkouts import source_root

PYTHON = source_root() / ".bootstrap" / "buildgrid" / "bin" / "python"
CHECKS = source_root() / "tests" / "tools" / "remote_worker_check.py"


@pytest.mark.skipif(not PYTHON.is_file(),
                    reason="BuildGrid missing: tools/bootstrap/40-buildgrid.sh")
def test_worker_reapi_layer():
    proc = subprocess.run([str(PYTHON), str(CHECKS)], cwd="/", capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("runs_an_action", "missing_output_and_failure", "record_only",
                 "refuses_another_platform", "escaping_paths_fail_the_action",
                 "blob_cache_is_lru_bounded"):
        assert f"ok: check_{name}" in proc.stdout
