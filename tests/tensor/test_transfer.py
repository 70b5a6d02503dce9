"""tensor_transfer_workgroup: the surface (E0324 misuse with locations), the neutral IR, PTX
for every profile (TMA with a view on sm_90a/sm_121a, exact replay elsewhere), and the
numpy oracle the hardware tests use (SPIR-V's refusal: tests/spirv_emit)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tensor.transfer_cases import CASES, Case, _box, expected, kernel
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file


def build(tmp_path, src, arch="sm_90a", emit="ptx"):
    path = tmp_path / "k.mettle"
    path.write_text(src)
    return compile_file(str(path), Options(emit=emit, gpu_arch=arch, dump_ir=True))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("arch", ["sm_90a", "sm_121a", "portable"])
def test_every_case_assembles_on_every_profile(tmp_path, ptxas, case, arch):
    for view in (True, False):
        r = build(tmp_path, kernel(case, view), arch)
        ptx = r.data.decode()
        native = view and arch != "portable"
        strided = any(es != 1 for es in case.element_strides)
        assert ("cp.async.bulk.tensor" in ptx) == native
        if native:
            assert f"cp.async.bulk.tensor.{case.rank}d.shared::cluster.global.tile" in ptx
            assert (f"cp.async.bulk.tensor.{case.rank}d.global.shared::cta.bulk_group" in ptx) \
                == (not strided)
            assert "mbarrier.arrive.expect_tx" in ptx
            assert "fence.proxy.tensormap::generic.acquire.gpu" in ptx
            assert ptx.count("mtlc.tensor_transfer native") == (1 if strided else 2)
        else:
            assert ptx.count("mtlc.tensor_transfer replay") == 2
        assert "tensor.transfer" in r.ir_text and f"<rank{case.rank} {case.element}" in r.ir_text
        ptxas(ptx, {"portable": "sm_75"}.get(arch, arch))


def test_ineligible_geometry_replays_with_its_reason(tmp_path):
    c = Case("odd", "f32", (30, 7), (3, 2), (1, 1), (0, 0))     # a 12-byte inner box
    ptx = build(tmp_path, kernel(c)).data.decode()
    assert "cp.async.bulk.tensor" not in ptx
    assert "replay: an inner box that is not a multiple of 16 bytes" in ptx
    c = Case("es", "f32", (64, 8), (8, 2), (2, 1), (0, 0))
    assert "replay: a dimension-0 element stride" in build(tmp_path, kernel(c)).data.decode()


@pytest.mark.parametrize("case", CASES[:3], ids=lambda c: c.name)
@pytest.mark.parametrize("arch", ["sm_90a", "portable"])
def test_direction_is_inferred_from_the_operand_spaces(tmp_path, ptxas, case, arch):
    # workgroup dst + global src is a load, the reverse a store: the very same program
    explicit = build(tmp_path, kernel(case), arch)
    inferred = build(tmp_path, kernel(case, inferred=True), arch)
    assert "direction" not in kernel(case, inferred=True)
    assert inferred.data == explicit.data and inferred.ir_text == explicit.ir_text
    assert "global_to_workgroup" in inferred.ir_text and "workgroup_to_global" in \
        inferred.ir_text
    ptxas(inferred.data.decode(), {"portable": "sm_75"}.get(arch, arch))


BOTH_WORKGROUP = """kernel(block = 64) k(g: float32*) {
  workgroup var a: float32[64];
  workgroup var b: float32[64];
  tensor_transfer_workgroup(&a[0], &b[0], rank: 1, element: f32, extent0: 64, tile0: 64);
}
"""


def test_direction_stays_required_when_the_spaces_do_not_decide(tmp_path):
    # (pointers inside a kernel are global or workgroup; generic ones never reach here)
    both_global = kernel(CASES[0], inferred=True).replace("(dst, &tile[0],", "(dst, src,")
    for src, spaces in ((BOTH_WORKGROUP, "workgroup"), (both_global, "global")):
        with pytest.raises(CompileError) as e:
            build(tmp_path, src)
        d = e.value.diagnostics[0]
        assert d.code == "E0324" and "needs `direction:` here" in d.message, d.message
        assert f"`dst` is a {spaces} pointer and `src` a {spaces} pointer" in d.message
        assert d.span is not None and d.span.line >= 3 and d.span.col > 1


BAD = [
    ("rank: 1", "rank: 6", "`rank:` must be 1 to 5, not 6"),
    ("element: f32", "element: f33", "`element:` must be one of"),
    ("tile0: 64", "tile0: 0", "`tile0:` must be a positive integer constant"),
    ("element_stride0: 1", "element_stride0: 9", "`element_stride0:` must be 1 to 8"),
    ("extent0: 1000", "extent0: 1000, extent1: 4", "names dimension 1 of a rank-1 transfer"),
    ("extent0: 1000", "extent0: 1000, stride0: 8", "`stride0:` must be the element size"),
    ("&tile[0], src,", "src, &tile[0],", "`dst` must be a workgroup pointer to float32"),
    ("view: vin", "view: src", "`view:` must be a uint8*"),
    ("direction: load", "direction: sideways", "`direction:` must be one of"),
    ("coordinate0: c0", "coordinate0: c0, flavour: 2", "unknown option `flavour:`"),
]


@pytest.mark.parametrize("old,new,message", BAD, ids=[b[2][:24] for b in BAD])
def test_misuse_is_located(tmp_path, old, new, message):
    src = kernel(CASES[0])
    first = src.index(old)
    src = src[:first] + new + src[first + len(old):]
    with pytest.raises(CompileError) as e:
        build(tmp_path, src)
    d = e.value.diagnostics[0]
    assert d.code == "E0324" and message in d.message, d.message
    assert d.span is not None and d.span.line >= 3


def test_varying_coordinates_are_refused(tmp_path):
    src = kernel(CASES[0]).replace("coordinate0: c0", "coordinate0: (int32)thread.x")
    with pytest.raises(CompileError) as e:
        build(tmp_path, src)
    assert e.value.diagnostics[0].code == "E0414"


def test_oracle_zero_fills_and_discards():
    c = Case("t", "f32", (5,), (4,), (2,), (-3,))     # reads -3, -1, 1, 3
    src = np.arange(1, 6, dtype=np.float32)
    tile, dst = expected(c, src, np.full(5, -7, np.float32))
    assert tile.tolist() == [0, 0, 2, 4] and dst.tolist() == [-7, 2, -7, 4, -7]
    assert _box(c).tolist() == [-1, -1, 1, 3]
