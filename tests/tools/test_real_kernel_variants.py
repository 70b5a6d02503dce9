"""Profile -> select on a real Mettle kernel: two tensor-tuple-budget variants of a GEMM.

The budget is a backend-only knob, so the variants differ only in their PTX (native WMMA
interior vs exact replay); ptxas profiles them offline and the occupancy policy must make
a decision, with `performance_claim: false`.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.tensor.kernels import matmul_source

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=ROOT):
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_budget_variants_profile_and_select(tmp_path, ptxas_path):
    src = tmp_path / "gemm.mettle"
    src.write_text(matmul_source("gemm", "f16", "f16", "f32", "f32", "m64n64k16"))
    profiles = []
    for name, budget in (("resident", "0"), ("replay", "8")):
        ptx = tmp_path / f"{name}.ptx"
        run("-m", "toolchain.compiler", "--emit-ptx", "--gpu-arch=sm_90a",
            f"--gpu-tensor-tuple-budget={budget}", src, "-o", ptx)
        prof = tmp_path / f"{name}.json"
        run("tools/gpu/ptxas_profile.py", "--arch", "sm_90a", "--ptxas", ptxas_path,
            "--require-zero-spills", "-o", prof, ptx)
        profiles.append(json.loads(prof.read_text()))
    regs = [next(iter(p_["functions"].values()))["registers"] for p_ in profiles]
    assert regs[0] != regs[1], "the budget must change the code ptxas sees"
    out = tmp_path / "selection.json"
    run("tools/gpu/ptxas_select.py", "--model", "sm_90", "--policy", "occupancy",
        "--require-selection", "-o", out, tmp_path / "resident.json", tmp_path / "replay.json")
    sel = json.loads(out.read_text())
    assert sel["performance_claim"] is False
    gemm = sel["entries"]["gemm"]
    # The resident interior keeps ~200 registers per lane; replay fits many more warps per
    # SM, so the occupancy policy must pick it (and says so).
    assert gemm["candidates"]["replay"]["occupancy"] > gemm["candidates"]["resident"]["occupancy"]
    assert (gemm["selection"], gemm["reason"]) == ("replay", "unique best under policy occupancy")
