"""WMMA operand staging (targets/ptx/tensor/staging.py) on the CPU: PTX structure, the
run-time versioning test, the conditions that keep the direct loads, the off switch, and
ptxas (sm_90a, sm_80, sm_121a) with no spills. tests/gpu/test_wmma_staging.py runs the
kernels and checks staged == direct == oracle bitwise on the device.

The CPU PTX interpreter (tests/tensor/ptx_sim.py) models mma.sync fragments only, not the
opaque WMMA fragments, so staged-vs-direct numerics are checked on the GPU only.
"""
import re
import subprocess

import pytest

from tests.tensor.staging_kernels import ALL, CASES, kloop
from toolchain.compiler import cli
from toolchain.compiler.driver import Options, compile_file


def compile_src(tmp_path, src: str, **kw):
    path = tmp_path / "k.mettle"
    path.write_text(src)
    kw.setdefault("optimize", True)
    kw.setdefault("gpu_arch", "sm_90a")
    r = compile_file(str(path), Options(emit="ptx", explain=True, **kw))
    return r.data.decode(), r.explain


def entry(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    return ptx[start:ptx.index("\n}\n", start)]


def no_spills(ptxas_path: str, ptx: str, arch: str, tmp_path) -> None:
    src = tmp_path / f"m_{arch}.ptx"
    src.write_text(ptx)
    proc = subprocess.run([ptxas_path, f"--gpu-name={arch}", "-v", str(src), "-o",
                           str(tmp_path / f"m_{arch}.cubin")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = proc.stdout + proc.stderr
    assert "spill" in info and not re.search(r"[1-9]\d* bytes spill", info), info


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_121a"])
def test_staged_structure_and_ptxas(tmp_path, ptxas_path, arch):
    ptx, explain = compile_src(tmp_path, ALL, gpu_arch=arch)
    for name, (_, fmt, bl) in CASES.items():
        body = entry(ptx, name)
        kind = "chain" if name.startswith("chain") else "loop"
        mmas = 3 if kind == "chain" else 1
        assert f"// mtlc.tensor_{kind} staged group=0" in body
        assert f"{name}: line" in explain and f"tensor_{kind} group 0: operands staged" in \
            explain
        # one 16-byte piece of A and of B per lane and chunk, into this warp's slots
        assert body.count("ld.global.v4.u32") == 2 * mmas
        assert body.count("st.shared.v4.u32") == 2 * mmas
        assert body.count("bar.warp.sync -1") == 2 * mmas
        staged_a = re.findall(rf"wmma\.load\.a\.sync\.aligned\.row\.m16n16k16\.shared\.{fmt} "
                              r"\{[^}]*\}, \[%r\d+\], 16;", body)
        staged_b = re.findall(rf"wmma\.load\.b\.sync\.aligned\.{bl}\.m16n16k16\.shared\.{fmt} "
                              r"\{[^}]*\}, \[%r\d+\], 16;", body)
        assert len(staged_a) == len(staged_b) == mmas
        # the stores precede a sync that precedes the shared fragment loads
        first = body.index("st.shared.v4.u32")
        assert body.index("bar.warp.sync", first) < body.index(".shared." + fmt, first)
        # versioned: a uniform alignment test picks the staged or the direct form
        assert re.search(r"and\.b32 %r\d+, %r\d+, 15;", body)
        assert re.search(r"and\.b32 %r\d+, %r\d+, 7;", body)
        assert re.search(r"@%p\d+ bra\.uni \$L__wmma_direct\d+;", body)
        assert body.count(f"wmma.load.a.sync.aligned.row.m16n16k16.global.{fmt}") == mmas
        assert body.count("wmma.mma.sync") == 2 * mmas
        # the warp's slots: linear thread id / 32, two 512-byte slots per warp
        assert re.search(r"shr\.u32 %r\d+, %r\d+, 5;", body)
        assert re.search(rf"mov\.u32 %r\d+, {name}_wmma_stage\d*;", body)
        assert re.search(rf"\.shared \.align 128 \.b8 {name}_wmma_stage\d*\[4096\];", ptx)
    no_spills(ptxas_path, ptx, arch, tmp_path)


def _direct(body: str) -> bool:
    return "wmma_stage" not in body and ".shared.f16" not in body and \
        "bar.warp.sync" not in body and "wmma.load.a.sync.aligned.row.m16n16k16.global" in body


def test_off_switch_keeps_direct_loads(tmp_path, ptxas):
    ptx, explain = compile_src(tmp_path, kloop("k1"), wmma_staging=False)
    body = entry(ptx, "k1")
    assert _direct(body) and ".shared" not in ptx
    assert "// mtlc.tensor_loop direct group=0: staging off (--gpu-wmma-staging=off)" in body
    assert "operands loaded directly (staging off" in explain
    assert body.count("wmma.mma.sync") == 1
    ptxas(ptx, "sm_90a")


def test_cli_flag(tmp_path):
    src = tmp_path / "k.mettle"
    src.write_text(kloop("k1"))
    outs = {}
    for flag in ("on", "off"):
        out = tmp_path / f"k_{flag}.ptx"
        assert cli.main(["-i", str(src), "--emit-ptx", "-O", "--gpu-arch", "sm_90a",
                         f"--gpu-wmma-staging={flag}", "-o", str(out)]) == 0
        outs[flag] = out.read_text()
    assert "staged group=0" in outs["on"] and "staged group=0" not in outs["off"]
    assert cli.main(["-i", str(src), "--emit-ptx", "--gpu-wmma-staging=maybe"]) != 0


@pytest.mark.parametrize("why,src,kw", [
    ("no declared kernel block shape", kloop("k1", block=False), {}),
    ("is below sm_80", kloop("k1"), {"gpu_arch": "sm_75"}),
])
def test_conditions_that_keep_direct_loads(tmp_path, ptxas, why, src, kw):
    ptx, explain = compile_src(tmp_path, src, **kw)
    body = entry(ptx, "k1")
    assert _direct(body)
    assert "// mtlc.tensor_loop direct group=0: " in body and why in body
    assert why in explain
    ptxas(ptx, kw.get("gpu_arch", "sm_90a"))


def test_unoptimized_compile_is_unchanged(tmp_path):
    """Staging belongs to resident groups, which only -O forms."""
    ptx, _ = compile_src(tmp_path, kloop("k1"), optimize=False)
    assert _direct(entry(ptx, "k1"))
