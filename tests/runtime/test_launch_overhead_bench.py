"""bench/launch_overhead.py runs everywhere: without a GPU it says why and exits 0."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_skips_cleanly_without_a_gpu(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "METTLE_CUDA_DRIVER": str(tmp_path / "libcuda.so.1")}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "launch_overhead.py"),
                           "--json", str(tmp_path / "out.json")], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("launch_overhead: skipped: no ")
    assert json.loads((tmp_path / "out.json").read_text())["skipped"].startswith("no ")
