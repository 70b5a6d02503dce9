"""bench/plain_kernels.py's A/B variants compile without a GPU: the benchmark switches
optimizer features off by replacing module attributes (reread.mark, staging.PIPELINE, ...),
and a pass whose signature moved once broke it only on the H200 (a TypeError inside -O)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_plain_kernel_variants_all_compile_for_sm_90a():
    bench = _load("plain_kernels")
    modules = bench.build_variants("sm_90a")
    for name in ("-O", "-O no-reread", "-O sync-staging", "-O no-staging", "-O no-load-ahead"):
        assert name in modules, sorted(modules)
    for name, module in modules.items():
        assert ".entry" in module.ptx, name
