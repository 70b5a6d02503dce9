"""Cause 4 of issue 18 (LANGUAGE.md §12.7): float multiply-add contraction is on by default
on PTX; `--fp-contract=off` keeps every f32/f64 add/sub/mul separately rounded (`.rn`)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from .source import compile_source, find_nvdisasm, ptx_of, sass
from tests.support.mettle_cli import mettle

SRC = """
fn axpy(a: float32, x: float32, y: float32) -> float32 {
  return a * x + y;
}

kernel(block = 64) k(a: float32, x: float32*, y: float32*, d: float64*) {
  var i: int32 = (int32)thread.x;
  y[i] = axpy(a, x[i], y[i]) - x[i] / a;
  d[i] = d[i] * d[i] - 1.0;
}

kernel(block = 64) plain(x: float32*) {
  x[0] = x[1] + x[2];
}
"""

ARITH = re.compile(r"\b(add|sub|mul)(\.rn)?\.f(32|64)\b")


def _arith(text: str) -> set[str]:
    return {m.group(0) for m in ARITH.finditer(text)}


def test_contraction_on_by_default_and_off_restores_rn(ptxas):
    on, off = ptx_of(SRC), ptx_of(SRC, fp_contract=False)
    assert _arith(on) == {"mul.f32", "add.f32", "sub.f32", "mul.f64", "sub.f64"}
    assert _arith(off) == {"mul.rn.f32", "add.rn.f32", "sub.rn.f32", "mul.rn.f64",
                           "sub.rn.f64"}
    assert "div.rn.f32" in on and "div.rn.f32" in off      # division is always IEEE
    for text in (on, off):
        ptxas(text, "sm_90a")


def test_one_contracted_remark_per_function_with_a_multiply_add():
    got = [(r.function, r.pass_name) for r in _remarks(SRC)]
    assert sorted(got) == [("axpy", "contracted"), ("k", "contracted")]
    assert all("--fp-contract=off" in r.text for r in _remarks(SRC))
    assert not _remarks(SRC, fp_contract=False)


def _remarks(src, **options):
    """The backend's contraction remarks (module.remarks) of one compile."""
    from toolchain.compiler.targets.ptx import emitter
    seen = []
    real = emitter.ModuleEmitter._remarks

    def spy(self, fn, em):
        real(self, fn, em)
        seen.extend(r for r in self.module.remarks.items if r.pass_name == "contracted")
    emitter.ModuleEmitter._remarks = spy
    try:
        compile_source(src, **options)
    finally:
        emitter.ModuleEmitter._remarks = real
    return list(dict.fromkeys(seen))


def test_ptxas_fuses_only_when_contraction_is_on(ptxas_path):
    nvdisasm = find_nvdisasm(ptxas_path)
    if nvdisasm is None:
        pytest.skip("nvdisasm unavailable (pip install nvidia-cuda-nvdisasm)")
    src = SRC.replace(" - x[i] / a", "")        # a division expands to FFMAs itself
    on = sass(ptxas_path, nvdisasm, ptx_of(src))
    off = sass(ptxas_path, nvdisasm, ptx_of(src, fp_contract=False))
    assert "FFMA" in on and "FFMA" not in off
    assert "DFMA" in on and "DFMA" not in off


def test_cli_flag(tmp_path: Path):
    src = tmp_path / "k.mettle"
    src.write_text(SRC)

    def run(*args):
        return mettle("--emit-ptx", "--gpu-arch=sm_90a", src, "-o", tmp_path / "k.ptx", *args)
    assert run("--fp-contract=off").returncode == 0
    assert "mul.rn.f32" in (tmp_path / "k.ptx").read_text()
    assert run("--fp-contract=on").returncode == 0
    assert "mul.rn.f32" not in (tmp_path / "k.ptx").read_text()
    bad = run("--fp-contract=fast")
    assert bad.returncode == 2 and "error[E0090]" in bad.stderr


def test_explain_reports_the_backend_decisions(tmp_path: Path):
    src = tmp_path / "k.mettle"
    src.write_text(SRC)
    out = mettle("--emit-ptx", "--gpu-arch=sm_90a", "--explain", src, "-o", tmp_path / "k.ptx")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("axpy: line 2: contracted: 1 float multiply-add pair")
               for line in lines), lines
    assert not any(line.startswith("plain:") for line in lines)
