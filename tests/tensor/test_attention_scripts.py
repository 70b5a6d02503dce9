"""bench/attention.py and examples/attention/check_attention.py are GPU scripts; here they
must at least start, and the benchmark must say why it did nothing (exit 0) where there is
no torch or no CUDA device."""
from __future__ import annotations

import os
import subprocess
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_bench_without_a_gpu_says_why_and_exits_0():
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a CUDA device is present: the benchmark would run for minutes")
    except ImportError:
        pass
    proc = run("bench/attention.py")
    assert proc.returncode == 0 and "nothing to do" in proc.stdout, proc.stdout + proc.stderr


def test_bench_shapes_parse():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import attention  # pants: no-infer-dep
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert [attention.parse_shape(s) for s in attention.SHAPES] == [
        (16, 16, 2048, 64), (8, 16, 4096, 128), (2, 16, 16384, 128)]


def test_check_script_documents_its_rule():
    proc = run("-c", "import examples.attention.check_attention as c; print(c.__doc__)")
    assert proc.returncode == 0 and "2 * max|out_pt - out_ref|" in proc.stdout, proc.stderr


def test_launcher_reads_the_kernel_constants_and_sizes_the_grid():
    from examples.attention import attention as a
    text = a.SOURCE.read_text()
    bm, bn = a.block_rows()
    # the values the source's own initializers give, by the launcher's reader of them
    for name, value in (("BLOCK_M", bm), ("BLOCK_N", bn)):
        expr = re.search(rf"^const {name} = ([^;]+);", text, re.M).group(1)
        assert a._integer(expr, a.constants()) == value, (name, expr, value)
    assert a.block_rows({"BLOCK_M": 64}) == (64, bn)
    assert a.constants({"ELEM": "bf16"})["ELEM"] == "bf16"
    assert a._integer("2 * 64 + (1 << 3) / 3", {}) == 130 and a._integer("1.5", {}) is None
    assert a.grid(1, 6) == (1, 6, 1) and a.grid(bm + 1, 2) == (2, 2, 1)
    with pytest.raises(ValueError, match="grid's y limit"):
        a.grid(1, 65536)


def test_check_script_lists_named_cases_and_refuses_an_empty_selection():
    proc = run("examples/attention/check_attention.py", "--list", "--case", "bf16-d128-*")
    names = proc.stdout.split()
    assert proc.returncode == 0 and "bf16-d128-launches200" in names, proc.stderr
    assert all(n.startswith("bf16-d128-") for n in names) and len(names) >= 20
    proc = run("examples/attention/check_attention.py", "--case", "no-such-case")
    assert proc.returncode == 1 and "no case matches" in proc.stdout


def test_bench_dry_run_compiles_every_variant():
    proc = run("bench/attention.py", "--dry-run", "--bf16")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for variant in ("d64 f16", "d64 bf16", "d128 f16", "d128 bf16"):
        assert f"variant {variant}: " in proc.stdout, proc.stdout
    assert "b2h16n16384d128    bf16  causal    2.199 TFLOP per call" in proc.stdout


def test_bench_and_check_script_take_the_wgmma_form():
    proc = run("bench/attention.py", "--dry-run", "--forms", "mma,wgmma", "--shapes",
               "b16h16n2048d64")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "variant d64 f16: " in proc.stdout and "variant d64 f16 wgmma: " in proc.stdout
    proc = run("bench/attention.py", "--dry-run", "--forms", "tensor")
    assert proc.returncode == 2 and "--forms" in proc.stderr
    proc = run("examples/attention/check_attention.py", "--list", "--form", "wgmma",
               "--case", "f16-d64-full-*")
    assert proc.returncode == 0 and "f16-d64-full-n1" in proc.stdout.split(), proc.stderr


def test_variant_bench_compiles_its_variants_and_parses_settings():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import attention_variants as av  # pants: no-infer-dep
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert av.parse_variant(["bm64", "BLOCK_M=64", "tile_wgmma=0", "ELEM=bf16"]) == \
        ("bm64", {"BLOCK_M": 64, "ELEM": "bf16"}, {"tile_wgmma": False})
    with pytest.raises(ValueError, match="not NAME=VALUE"):
        av.parse_variant(["x", "BLOCK_M"])
    proc = run("bench/attention_variants.py", "--dry-run", "--shapes", "b1h1n64d64",
               "--variant", "bm128", "BLOCK_M=128", "--variant", "bm64", "BLOCK_M=64")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    blocks = re.findall(r"^(\w+) d64: block \((\d+), 1, 1\)", proc.stdout, re.M)
    assert blocks == [("bm128", "256"), ("bm64", "128")], proc.stdout
