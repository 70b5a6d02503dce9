"""Integer promotion in kernels (LANGUAGE §12.10): every operator on int8/uint8/int16/uint16
gives C's int32 result on PTX (ptxas-assembled; run on the GPU by
test_kernels_gpu.py) and on SPIR-V (spirv-val; executed on PoCL when the trixie root is
bootstrapped), the same as the x86-64 host test in tests/host/test_semantics.py."""
from __future__ import annotations

import subprocess

import pytest

from tests.difftest.narrow_kernels import BLOCK, EXPRS, N, NARROW, inputs, oracle, source
from tests.host.support import REPO, compile_cmd
from tests.support import ptxas, spirv
from tests.support.opencl import Buf, Scalar, opencl_available, run_spirv_kernel
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def emit(tmp_path, t: str, kind: str) -> bytes:
    src = tmp_path / f"narrow_{t}.mettle"
    src.write_text(source(t))
    out = tmp_path / f"narrow_{t}.{kind}"
    extra = ["--gpu-arch=sm_90a"] if kind == "ptx" else []
    r = subprocess.run(compile_cmd(f"--emit-{kind}", str(src), "-o", str(out), *extra),
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@pytest.mark.parametrize("t", list(NARROW))
def test_narrow_ops_ptx_assembles(tmp_path, t):
    if ptxas.find_ptxas() is None:
        pytest.skip("no ptxas (the nvidia-cuda-nvcc wheel)")
    ptx = emit(tmp_path, t, "ptx").decode()
    ptxas.assemble(ptx, "sm_90a")
    bits = NARROW[t][0]
    # the operands are widened to 32 bits before the arithmetic (promotion), and the
    # narrow stores of `s` and `m` narrow again
    assert f"cvt.{'s' if NARROW[t][1] else 'u'}32.{'s' if NARROW[t][1] else 'u'}{bits}" in ptx \
        or f"ld.global.{'s' if NARROW[t][1] else 'u'}{bits}" in ptx


@pytest.mark.parametrize("t", list(NARROW))
def test_narrow_ops_spirv_on_pocl(tmp_path, t):
    np = pytest.importorskip("numpy")
    spv = emit(tmp_path, t, "spirv")
    if spirv.find_spirv_val():
        spirv.validate(spv)
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)
    a, b = inputs(t)
    out = run_spirv_kernel(spv, f"narrow_{t}", [N], [BLOCK],
                           [Buf(np.full(N * len(EXPRS), 0x5A5A5A5A, np.int32), "int32",
                                out=True),
                            Buf(np.array(a, dtype=t), t), Buf(np.array(b, dtype=t), t),
                            Scalar(N, "int32")])
    got = np.frombuffer(out[0], dtype=np.int32).tolist()
    want = oracle(t, a, b)
    bad = [(k // len(EXPRS), EXPRS[k % len(EXPRS)], w, g)
           for k, (w, g) in enumerate(zip(want, got)) if w != g]
    assert not bad, f"{len(bad)} wrong, first: {bad[:5]}"


def test_struct_locals_start_zeroed_on_pocl(tmp_path):
    """A SPIR-V kernel with an uninitialized struct local did not compile at all (E0510:
    the zero image was a constant global read through a generic pointer); it now stores
    zeros field by field, and PTX does the same."""
    np = pytest.importorskip("numpy")
    from tests.difftest.zero_kernel import BLOCK as ZB, N as ZN, SOURCE, expected
    src = tmp_path / "zero.mettle"
    src.write_text(SOURCE)
    outs = {}
    for kind, extra in (("ptx", ["--gpu-arch=sm_90a"]), ("spirv", [])):
        out = tmp_path / f"zero.{kind}"
        r = subprocess.run(compile_cmd(f"--emit-{kind}", str(src), "-o", str(out), *extra),
                           cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs[kind] = out.read_bytes()
    if ptxas.find_ptxas():
        ptxas.assemble(outs["ptx"].decode(), "sm_90a")
    if spirv.find_spirv_val():
        spirv.validate(outs["spirv"])
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)
    res = run_spirv_kernel(outs["spirv"], "zero_locals", [ZN], [ZB],
                           [Buf(np.full(ZN, -7, np.int64), "int64", out=True),
                            Scalar(ZN, "int32")])
    assert np.frombuffer(res[0], dtype=np.int64).tolist() == expected()
