"""Hardware half of the kernel differential tests: the narrow-integer kernels and the random
scalar kernels run as PTX on a CUDA GPU against the CPU reference. Skips without a GPU.

    python3 -m pytest -q tests/difftest/test_kernels_gpu.py -p no:cacheprovider
"""
from __future__ import annotations

import pytest

from tests.difftest.kernel_cases import random_kernel_failures
from tests.difftest.narrow_kernels import BLOCK, EXPRS, N, NARROW, inputs, oracle, source
from toolchain.providers.cuda import driver
from tools.difftest.kernel_runs import compile_mettle_emit, run_ptx

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    why = driver.probe()
    if why is not None:
        pytest.skip(why)


@pytest.mark.parametrize("t", list(NARROW))
def test_narrow_ops_on_gpu(tmp_path, t):
    from tests.gpu.harness import Buffer, Scalar, run_kernel
    src = tmp_path / "k.mettle"
    src.write_text(source(t))
    rc, diag = compile_mettle_emit(str(src), str(tmp_path / "k.ptx"), "ptx", [])
    assert rc == 0, diag
    a, b = inputs(t)
    out = run_kernel((tmp_path / "k.ptx").read_text(), f"narrow_{t}", grid=N // BLOCK,
                     block=BLOCK,
                     args=[Buffer("out", "int32", size=N * len(EXPRS), poison=0x5A5A5A5A,
                                  output=True),
                           Buffer("a", t, data=np.array(a, dtype=t)),
                           Buffer("b", t, data=np.array(b, dtype=t)), Scalar("int32", N)])
    got = [int(x) for x in out["out"]]
    want = oracle(t, a, b)
    bad = [(k // len(EXPRS), EXPRS[k % len(EXPRS)], w, g)
           for k, (w, g) in enumerate(zip(want, got)) if w != g]
    assert not bad, f"{len(bad)} wrong, first: {bad[:5]}"


@pytest.mark.parametrize("opt", ["O0", "O"])
def test_random_kernels_on_gpu_match_c(opt):
    failures = random_kernel_failures("ptx", opt, run_ptx)
    assert not failures, "\n".join(failures[:3])


def test_struct_locals_start_zeroed_on_gpu(tmp_path):
    from tests.difftest.zero_kernel import BLOCK as ZB, N as ZN, SOURCE, expected
    from tests.gpu.harness import Buffer, Scalar, run_kernel
    src = tmp_path / "zero.mettle"
    src.write_text(SOURCE)
    rc, diag = compile_mettle_emit(str(src), str(tmp_path / "zero.ptx"), "ptx", [])
    assert rc == 0, diag
    out = run_kernel((tmp_path / "zero.ptx").read_text(), "zero_locals", grid=ZN // ZB,
                     block=ZB, args=[Buffer("out", "int64", size=ZN, poison=-7, output=True),
                                     Scalar("int32", ZN)])
    assert [int(x) for x in out["out"]] == expected()
