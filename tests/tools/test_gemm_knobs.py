"""bench/wgmma_kernels.parse_knob, the one reading of `KNOB=INT` that bench/gemm.py's --knob
and --baseline and tools/gpu/gemm_case.py's --knob share: the value in the knob's own type,
and a ValueError for anything that is not one of the pipeline module's settings."""
from __future__ import annotations

import pytest

from bench.wgmma_kernels import parse_knob
from toolchain.compiler.targets.ptx.tensor import wgmma


def test_the_value_takes_the_knobs_type():
    assert parse_knob(wgmma, "CLIPPED_STORE=0") == ("CLIPPED_STORE", False)
    assert parse_knob(wgmma, "STREAM_K=2") == ("STREAM_K", 2)
    assert parse_knob(wgmma, "PREFETCH_C_AHEAD=-1") == ("PREFETCH_C_AHEAD", -1)


@pytest.mark.parametrize("text", ["NO_SUCH_KNOB=1", "stream_k=1", "STREAM_K=two",
                                  "STREAM_K", "STREAM_K=1.5"])
def test_anything_else_is_refused(text):
    with pytest.raises(ValueError, match="expected KNOB=INT"):
        parse_knob(wgmma, text)
