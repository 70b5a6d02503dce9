"""async-staging: global->workgroup load/store pairs before a publication barrier become one
async-copy group, only when every legality condition of gpu.md holds."""
from __future__ import annotations

import pytest

from tests.opt.gpu_kernels import ASYNC_STAGE as STAGE
from tests.support import spirv
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def build(tmp_path, arch="sm_90a", emit="ptx", t="float32", between="", order="acq_rel",
          optimize=True):
    path = tmp_path / "k.mettle"
    path.write_text(STAGE.format(t=t, between=between, order=order))
    r = compile_file(str(path), Options(emit=emit, gpu_arch=arch, optimize=optimize,
                                        explain=True, verify_each=True))
    return r.data if emit == "spirv" else r.data.decode(), r.explain


@pytest.mark.parametrize("t", ["float32", "int64"])
def test_pairs_become_one_async_group(tmp_path, ptxas, t):
    ptx, explain = build(tmp_path, t=t)
    size = 4 if t == "float32" else 8
    assert ptx.count(f"cp.async.ca.shared.global") == 2 and f"], {size};" in ptx
    assert ptx.count("cp.async.commit_group") == 1
    assert ptx.index("cp.async.wait_group 0") < ptx.index("bar.sync 0")
    assert "st.shared" not in ptx.split("bar.sync 0")[0]
    assert "stage: line 10: async-staging: 2 global->workgroup load/store pair(s) staged" \
        in explain
    ptxas(ptx, "sm_90a")


def test_portable_and_spirv_replay_the_same_region(tmp_path, ptxas):
    ptx, explain = build(tmp_path, arch="portable")
    assert "async-staging: 2" in explain and "cp.async" not in ptx
    ptxas(ptx, "sm_75")
    spv, explain = build(tmp_path, emit="spirv")
    assert "async-staging: 2" in explain
    if spirv.find_spirv_val():
        spirv.validate(spv)


@pytest.mark.parametrize("between,why", [
    ("var peek: float32 = tile[7];", "load between the staged copies"),
    ("y[0] = 1.0;", "another store before the barrier"),
])
def test_intervening_effects_refuse(tmp_path, between, why):
    ptx, explain = build(tmp_path, between=between)
    assert "cp.async" not in ptx and f"staging not formed: {why}" in explain


def test_two_byte_elements_and_weak_barriers_are_left_alone(tmp_path):
    ptx, explain = build(tmp_path, t="uint16")
    assert "cp.async" not in ptx and "a 2-byte element" in explain
    ptx, explain = build(tmp_path, order="acquire")
    assert "cp.async" not in ptx and "the barrier is not an acq_rel/seq_cst" in explain


def test_explicit_async_groups_are_left_alone(tmp_path):
    ptx, explain = build(tmp_path, between="async_copy_commit(); async_copy_wait(0);")
    assert "async-staging" not in explain and ptx.count("cp.async.ca") == 0


def test_without_O_nothing_is_staged(tmp_path):
    ptx, explain = build(tmp_path, optimize=False)
    assert "cp.async" not in ptx and "async-staging" not in explain
