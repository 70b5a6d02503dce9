"""The SPIR-V profile refuses every tensor operation with a located capability diagnostic
(E0510): the warp-level tensor_mma/tensor_matmul/tensor_epilogue, tensor_transfer_workgroup
(with its direction written or inferred), and workgroup-scope tensor_matmul with and without
a fused epilogue or `persistent:`. The PTX side of each is in tests/tensor; these cases live
here so that only SPIR-V tests depend on the SPIR-V backend."""
from __future__ import annotations

import pytest

from bench.wgmma_kernels import gemm_source
from tests.tensor.kernels import epilogue_source, matmul_source, mma_source
from tests.tensor.transfer_cases import CASES, kernel
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def refusal(tmp_path, src: str) -> CompileError:
    path = tmp_path / "k.mettle"
    path.write_text(src)
    with pytest.raises(CompileError) as info:
        compile_file(str(path), Options(emit="spirv"), source_text=src)
    return info.value


@pytest.mark.parametrize("src", [
    mma_source("k", "f16", "f16", "f32", "f32", "m16n16k16"),
    matmul_source("k", "f16", "f16", "f32", "f32", "m16n16k16"),
    epilogue_source("k", "f32", "m16n16"),
])
def test_spirv_profile_rejects_tensor_operations(tmp_path, src):
    d = refusal(tmp_path, src).diagnostics[0]
    assert d.code == "E0510" and "tensor" in d.message and d.span is not None


def test_transfer_refused_with_a_capability_diagnostic(tmp_path):
    d = refusal(tmp_path, kernel(CASES[0])).diagnostics[0]
    assert d.code == "E0510" and "tensor_transfer_workgroup" in d.message and d.span.line == 4


@pytest.mark.parametrize("case", CASES[:3], ids=lambda c: c.name)
def test_transfer_with_an_inferred_direction_refused_alike(tmp_path, case):
    assert refusal(tmp_path, kernel(case, inferred=True)).diagnostics[0].code == "E0510"


@pytest.mark.parametrize("options", [{}, {"epilogue": "col_bias_relu"}],
                         ids=["plain", "epilogue"])
def test_workgroup_matmul_refused_with_capability_diagnostic(tmp_path, options):
    d = refusal(tmp_path, gemm_source("f16", **options)).diagnostics[0]
    assert d.code == "E0510" and "tensor_matmul" in d.message and d.span is not None


def test_persistent_matmul_refused(tmp_path):
    assert refusal(tmp_path, gemm_source("f16", persistent=True)).diagnostics[0].code == \
        "E0510"
