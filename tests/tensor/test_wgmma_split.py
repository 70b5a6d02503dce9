"""The split form of a workgroup-scope tensor_matmul (every PTX profile without the sm_90a
pipeline), executed by the CPU PTX interpreter against the exact oracle: sub-region origins,
the round-robin over however many subgroups the workgroup has (fewer, as many, or more
than the sub-regions), M/N/K tails with padded strides and untouched poisoned padding."""
from __future__ import annotations

import pytest

from . import narrow_cases as NC
from .ptx_sim import Sim
from .test_defaults import LAYOUTS, operands, ptx_of

SOURCE = """\
kernel mm(a: uint16*, b: uint16*, c: float32*, d: float32*, pm: uint32, pn: uint32,
          pk: uint32, lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32) {
  tensor_matmul(a, b, c, d, block.y * 64, block.x * 64, pm, pn, pk, shape: m64n64k16,
                input_type: f16, output_type: f32, scope: workgroup,
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);
}
"""


@pytest.mark.parametrize("arch,warps", [("sm_121a", 1), ("sm_121a", 2), ("sm_121a", 3),
                                        ("portable", 2)])
def test_split_regions_exact_on_tails(arch, warps):
    M, N, K = 40, 70, 7                    # 2 x 1 workgroups; each splits into two 32 x 64
    ptx = ptx_of(SOURCE, arch, budget=1)   # budget 1: the sub-regions replay (the CPU
    assert "wgmma" not in ptx              # interpreter has no WMMA); structure is the same
    bufs, lds, want = operands("f16", M, N, K, seed=4070 + warps)
    poison = bufs["d"].copy()
    mem = Sim(ptx, "mm").run((2, 1), 32 * warps, [("buf", w, bufs[w]) for w in "abcd"] +
                             [("u32", v) for v in (M, N, K, *lds)])
    NC.check_d(mem.read("d"), want, LAYOUTS[3], lds[3], poison)
