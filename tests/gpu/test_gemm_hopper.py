"""Hardware tests of the workgroup-scope tensor_matmul on sm_90a (docs/reference/gemm.md): correctness
against torch fp32 on M/N/K tails, random non-zero data, NaN-poisoned D with untouched
padding, f32 and f16/bf16 results (the 16-bit ones against the oracle rounded once), every
fused epilogue (docs/reference/gemm.md "Fused epilogue") on both paths, the split fallback on the
same GPU, and the device-built tensor maps against the
driver's encoder. Each check runs bench/gemm.py in its own process (a faulting kernel
poisons its CUDA context); $METTLE_GPU_SANITIZER=memcheck|racecheck runs it under
compute-sanitizer. Skips without torch, without a CUDA device, or on a GPU that is not
compute capability 9.0.

    python3 -m pytest tests/gpu/test_gemm_hopper.py
    METTLE_GPU_SANITIZER=memcheck python3 -m pytest tests/gpu/test_gemm_hopper.py -k small
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import SANITIZER_ERROR_EXIT, SANITIZERS, sanitizer_path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "gemm.py"


def _hopper_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    if torch.cuda.get_device_capability(0) != (9, 0):
        return "not a compute capability 9.0 (Hopper) GPU"
    return None


pytestmark = pytest.mark.skipif(_hopper_reason() is not None,
                                reason=str(_hopper_reason()))


def _run(*args: str, timeout: int = 300) -> str:
    command = [sys.executable, str(BENCH), *args]
    tool = os.environ.get("METTLE_GPU_SANITIZER")
    if tool:
        if tool not in SANITIZERS:
            pytest.fail(f"METTLE_GPU_SANITIZER must be one of {SANITIZERS}")
        exe = sanitizer_path()
        if exe is None:
            pytest.skip("compute-sanitizer is not on PATH")
        command = [exe, "--tool", tool, "--error-exitcode", str(SANITIZER_ERROR_EXIT),
                   *command]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(command)} failed:\n{out}"
    return out


def test_small_tails_native_and_split():
    """128x256x64, 300x520x200, 129x257x65 in f16 and bf16, f32 and 16-bit results,
    native and split paths."""
    out = _run("--check", "--small", "--no-bench")
    assert "CHECK OK" in out, out


def test_fused_epilogues_on_tails_native_and_split():
    """Every fused epilogue (scale, ReLU, clamp, row/column/matrix bias, column-major
    matrix bias with a padded runtime ldbias) with f32 and f16/bf16 results on 128x256x64,
    300x520x200, 129x257x65 and K = 0: random data against the torch fp32 oracle in
    tensor_epilogue's order, poisoned D with untouched padding, and the pipeline and the
    split path (256 work-items) bit for bit equal to each other and to the oracle on
    small-integer data (every sum exact)."""
    out = _run("--check", "--small", "--no-bench", "--epilogue", "all", timeout=900)
    assert "CHECK OK" in out, out
    assert out.count("pipeline = split = oracle on integers: True") == 4 * 6 * 4, out


def test_persistent_tails_native_and_split():
    """`persistent: 8` over the whole of D: M/N/K tails, tile counts that are not
    multiples of the grid (9 tiles on 4 workgroups, 32 on 5 and on 3, 8 on 3), more
    workgroups than tiles, K = 0, the split path (256 work-items) and 4096^3 on the
    default grid, f16/bf16 with f32 and 16-bit results, against the torch fp32 oracle
    with poisoned D and untouched padding, and 200 launches of 4096^3 back to back (a
    race inside one launch shows as a hang: the time limit fails the test); --small
    under a sanitizer: three cases, no stress."""
    small = ["--small"] if os.environ.get("METTLE_GPU_SANITIZER") else []
    out = _run("--check-persistent", "--no-bench", *small, timeout=150)
    assert "CHECK OK" in out, out
    assert out.count(" persistent ") == 4 * (3 if small else 9), out


def test_pingpong_tails_alias_and_stress():
    """`schedule: pingpong` over the whole of D (bench/gemm.py --check-pingpong): the
    persistent checks' tails and grids, N = 100 (a right half tile wholly outside N), an
    odd tile count per workgroup, K = 0, 5000x3000x4104, the split path (256 work-items),
    C aliasing D (f32 D), f16/bf16 with f32 and 16-bit results, and 200 launches of
    4096^3 back to back (a hang or race fails on the time limit); --small under a
    sanitizer."""
    small = ["--small"] if os.environ.get("METTLE_GPU_SANITIZER") else []
    out = _run("--check-pingpong", "--no-bench", *small, timeout=240)
    assert "CHECK OK" in out, out
    per = 4 if small else 11
    assert out.count(" pingpong ") >= 4 * per, out


def test_auto_both_branches_tails_alias_and_stress():
    """`schedule: auto` over the whole of D (bench/gemm.py --check-auto): every ping-pong
    check case with A/B row pitches that are multiples of 128 bytes (the ping-pong
    pipeline) and with pitches that are not (the cooperative one), the split path, C
    aliasing D, f16/bf16 with f32 and 16-bit results, and 100 launches of 4096^3 back to
    back on each branch; --small under a sanitizer."""
    small = ["--small"] if os.environ.get("METTLE_GPU_SANITIZER") else []
    out = _run("--check-auto", "--no-bench", *small, timeout=300)
    assert "CHECK OK" in out, out
    assert out.count(" auto aligned ") == out.count(" auto misaligned ") >= 4 * 3, out


@pytest.mark.parametrize("bn,schedules", [(232, "cooperative,auto"),
                                           (240, "cooperative,pingpong,auto")])
def test_narrow_widths_auto_and_paired(bn, schedules):
    """The widths that fit N = 3000 in 13 tiles (docs/reference/gemm.md "Choosing the
    tile"): `auto`'s checks at that width (232: the cooperative pipeline alone) and the
    `cluster: 2` checks of every schedule the width has (paired B boxes of 120 and 112
    rows at 232, ping-pong quarters of 64 and 56 at 240), tails, the split path (232:
    computed as 240 columns cut at the region's own), C aliasing D and 5000x3000x4104;
    --small under a sanitizer."""
    small = ["--small"] if os.environ.get("METTLE_GPU_SANITIZER") else []
    out = _run("--check-auto", "--check-cluster", "--bn", str(bn), "--no-stress",
               "--cluster-schedules", schedules, "--no-bench", *small, timeout=400)
    assert f"kernels of the checks: 128x{bn} tiles" in out, out
    assert "CHECK OK" in out, out
    for schedule in schedules.split(","):
        assert f" cluster {schedule} " in out, out


@pytest.mark.parametrize("bn", [160, 64])
def test_tall_tiles_tails_persistent_and_stress(bn):
    """256-row tiles (docs/reference/gemm.md "Tall tiles": two 64-row blocks per consumer
    against one B stage): every check shape (tails, 5000x3000x4104, 4096^3), the split
    paths (256 work-items, no shared memory), the persistent checks' tails and grids and
    200 launches of 4096^3 back to back, f16/bf16 with f32 and 16-bit results; --small
    under a sanitizer."""
    small = ["--small"] if os.environ.get("METTLE_GPU_SANITIZER") else []
    out = _run("--check", "--bm", "256", "--bn", str(bn), "--no-bench", *small,
               timeout=400)
    assert f"kernels of the checks: 256x{bn} tiles" in out, out
    assert "CHECK OK" in out, out
    assert out.count(" persistent ") >= 4 * 3, out


def test_stream_k_tails_alias_determinism_and_stress():
    """Stream-K (`workspace:`; bench/gemm.py --check-streamk), cooperative and auto (both
    branches), each alone and in clusters of 2 (four kernels a format, sixteen in all), as
    shipped and with the last round after whole rounds split too
    (--stream-k 2): tiles split 8, 4, 3 and 2 ways and not at all (one K chunk, K = 0),
    5000x3000x4104 and 4096^3, the split path, C aliasing D, f16/bf16 with f32 and
    16-bit results; every counter left at zero, two launches bitwise equal, and 200
    launches of 1000x1000x8200 (every tile split) back to back per schedule; --small
    under a sanitizer."""
    small = ["--small"] if os.environ.get("METTLE_GPU_SANITIZER") else []
    for mode in ("1", "2"):
        out = _run("--check-streamk", "--stream-k", mode, "--no-bench", *small, timeout=400)
        assert "CHECK OK" in out, out
        assert out.count("two launches bitwise equal: True; counters left non-zero: 0") \
            == 16, out
        assert out.count(" stream-K cooperative ") >= 4 * 3, out
        assert out.count(" stream-K cooperative cluster ") >= 4 * 3, out


def test_all_tails_and_large():
    """Adds 1000^3, K = 0 (D = C), 4096^3 and 5000x3000x4104."""
    if os.environ.get("METTLE_GPU_SANITIZER"):
        pytest.skip("the large shapes take too long under compute-sanitizer")
    out = _run("--check", "--no-bench")
    assert "CHECK OK" in out, out


def test_device_built_tensor_maps_match_the_driver_encoder():
    """The map fields the copy engine reads agree with cuTensorMapEncodeTiled's; only two
    bytes the driver sets beyond them (offsets 65 and 73) may differ."""
    out = _run("--probe")
    lines = out.splitlines()
    for fmt, elem in (("f16", 6), ("bf16", 10)):
        start = lines.index(next(x for x in lines if x.startswith(f"host {fmt}:")))
        ours = next(x for x in lines[start:] if f"elem={elem} rank=1 shift=0" in x)
        assert "MATCH" in ours or "differs at [65, 73]" in ours, ours
