"""subgroup-width: subgroup_size() folds to 32 on PTX when every launch has full subgroups,
and a strided loop is versioned on `subgroup_size() == 32` when a launch may not."""
from __future__ import annotations

from tests.opt.gpu_kernels import SUBGROUP_WIDTH as SRC
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def build(tmp_path, shape: str, emit: str = "ptx"):
    path = tmp_path / "k.mettle"
    path.write_text(SRC.format(shape=shape))
    r = compile_file(str(path), Options(emit=emit, gpu_arch="sm_90a", optimize=True,
                                        explain=True, dump_ir=True, verify_each=True))
    return r


def test_declared_full_block_folds_the_size(tmp_path, ptxas):
    r = build(tmp_path, "(block = 128)")
    assert "subgroup.size" not in r.ir_text
    assert "subgroup-width: subgroup_size() is the constant 32 (1 use(s))" in r.explain
    assert "unroll-runtime" not in r.explain     # a constant stride: ptxas unrolls it
    ptxas(r.data.decode(), "sm_90a")


def test_unknown_block_is_versioned(tmp_path, ptxas):
    r = build(tmp_path, "")
    assert "versioned on subgroup_size() == 32" in r.explain
    ir = r.ir_text
    assert ir.count("subgroup.size") == 2                   # the entry test + the exact copy
    assert ir.count("subgroup.reduce") == 2                  # one per version
    ptxas(r.data.decode(), "sm_90a")


def test_partial_block_is_versioned(tmp_path):
    assert "versioned" in build(tmp_path, "(block = 100)").explain


def test_spirv_has_no_known_width(tmp_path):
    r = build(tmp_path, "(block = 128)", emit="spirv")
    assert "subgroup-width" not in r.explain and "subgroup.size" in r.ir_text
