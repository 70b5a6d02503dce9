"""Hardware: fused epilogues with a bias on the direct m16n8 families give bitwise the same
tile as the replayed and the unoptimized compile, and as the float32 CPU oracle.

The cases of tests/tensor/fused_bias_cases.py (K loop, chain and 3-stage async-copy
pipeline; row, column and matrix bias in both layouts with static or runtime ldbias; ReLU,
clamp, identity; random non-zero alpha/beta/bias; poisoned padding of D) run compiled three
ways: -O (accumulator resident, epilogue applied to the registers through the m16n8
mapping, one store), -O with --gpu-tensor-tuple-budget=1 (the same IR replayed: memory
epilogue) and no -O. On the H200 (sm_90a) the FP8 mma.sync and structured 2:4 mma.sp
families are native; block-scaled runs only where the local GPU is sm_120a/sm_121a.
"""
from __future__ import annotations

from functools import cache

import pytest

from tests.gpu.harness import Buffer, Scalar
from tests.tensor import fused_bias_cases as FB
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.targets.ptx.profiles import detect_local_arch

MODES = {"plain": dict(optimize=False), "fused": dict(optimize=True),
         "replay": dict(optimize=True, tensor_tuple_budget=1)}


@cache
def arch() -> str:
    return detect_local_arch() or "sm_90a"


def families() -> tuple[str, ...]:
    native = arch() in ("sm_120a", "sm_121a")
    return FB.SM90_FAMILIES + (("scaled",) if native else ())


def gpu_args(case) -> list:
    kinds = {"u32": "uint32", "i32": "int32", "f32": "float32"}
    return [Buffer(a[1], str(a[2].dtype), data=a[2], output=a[3]) if a[0] == "buf"
            else Scalar(kinds[a[0]], float(a[1]) if a[0] == "f32" else int(a[1]))
            for a in case.args]


@pytest.mark.parametrize("row", [pytest.param(r, id=FB.case_id(r)) for r in FB.MATRIX])
@pytest.mark.parametrize("seed", [1, 2], ids=["seed1", "seed2"])
def test_fused_bias_against_replay_plain_and_oracle(gpu_run, tmp_path, row, seed):
    if row[0] not in families():
        pytest.skip(f"{row[0]} has no native m16n8 instruction on {arch()}")
    case = FB.build(row, seed=seed)
    path = tmp_path / "fb.mettle"
    path.write_text(case.source)
    got = {}
    for mode, kw in MODES.items():
        ptx = compile_file(str(path), Options(emit="ptx", gpu_arch=arch(), **kw)).data.decode()
        if mode == "fused":
            assert "mtlc.tensor_epilogue fused on resident group=0 (m16n8" in ptx
        out = gpu_run(ptx, case.kernel, case.grid, case.block, gpu_args(case))
        case.check(out)
        got[mode] = out["c"]
    assert got["fused"].tobytes() == got["replay"].tobytes() == got["plain"].tobytes()
