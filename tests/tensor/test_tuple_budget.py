"""--gpu-tensor-tuple-budget: the backend-only cap on resident tensor fragments per lane.

A region whose resident accumulator and operand fragments exceed the budget replays exactly
instead of using the native WMMA interior; 0 restores the backend default. Both forms
assemble, and the IR is identical (the choice is the backend's alone).
"""
from pathlib import Path

from tests.tensor.kernels import matmul_source
from tests.support.mettle_cli import mettle

ROOT = Path(__file__).resolve().parents[2]


def emit(tmp_path: Path, *flags: str) -> str:
    src = tmp_path / "gemm.mettle"
    src.write_text(matmul_source("gemm", "f16", "f16", "f32", "f32", "m64n64k16"))
    out = tmp_path / f"gemm{len(flags)}{'_'.join(flags)}.ptx"
    proc = mettle("--emit-ptx", "--gpu-arch=sm_90a", *flags, src, "-o", out, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def test_budget_switches_native_interior_to_exact_replay(tmp_path, ptxas):
    default = emit(tmp_path)
    tight = emit(tmp_path, "--gpu-tensor-tuple-budget=8")
    zero = emit(tmp_path, "--gpu-tensor-tuple-budget=0")
    assert "wmma.mma.sync" in default and "wmma.mma.sync" not in tight
    assert zero == default
    for ptx in (default, tight):
        ptxas(ptx, "sm_90a")


def test_budget_range_is_checked(tmp_path):
    src = tmp_path / "k.mettle"
    src.write_text("kernel k(a: int32*) { a[0] = 1; }\n")
    proc = mettle("--emit-ptx", "--gpu-tensor-tuple-budget=5000", src, cwd=ROOT)
    assert proc.returncode == 2 and "0..4096" in proc.stderr
