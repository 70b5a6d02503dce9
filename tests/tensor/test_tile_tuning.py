"""The register-tile options that keep the bits (docs/reference/tiles.md "Targets"): each
gives the bits of both off. --gpu-tile-rescale-skip=on (the default) leaves out the
multiplies of a row scaling whose factors are all exactly 1 in a subgroup;
--gpu-tile-copy-wait=matmul waits for a shared tile's copies at the matmul that reads it
instead of at the next load's barrier. The attention example runs on the CPU models of
the register forms (mma.sync on sm_80; wgmma on sm_90a, Q in registers or in workgroup
memory) with and without each, on data whose first key block settles most row maxima (so
later blocks take the skip) and on plain random data (so they do not)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from .frag_sim import run_frag
from .test_tile_frag import check_attention, compile_attention, compile_text
from .wgfrag_sim import run_wgfrag

FORMS = {"mma": (run_frag, {"arch": "sm_80"}),
         "wgmma": (run_wgfrag, {"arch": "sm_90a", "tile_wgmma": True,
                                "tile_wgmma_a": "registers"}),
         "wgmma-ss": (run_wgfrag, {"arch": "sm_90a", "tile_wgmma": True,
                                   "tile_wgmma_a": "shared"})}
OFF = {"tile_rescale_skip": False, "tile_copy_wait": "load"}    # both options off
TUNINGS = {
    "skip": {"tile_rescale_skip": True},            # (the default)
    "wait": {"tile_copy_wait": "matmul"},
}
# (fmt, d, causal, n, block_m, block_n, work_items): ragged last key block, several blocks
CASE = ("f16", 32, True, 150, 64, 32, 128)
HEADS = 1


def _compile(tmp_path, ptxas, form: str, **opts):
    """(objects, PTX) of the example in `form`, assembled by ptxas."""
    fmt, d, _, _, block_m, block_n, work_items = CASE
    objects, _ = compile_attention(tmp_path, fmt, d, block_m, block_n, work_items,
                                   **FORMS[form][1], **opts)
    ptxas(compile_text.ptx, FORMS[form][1]["arch"])
    return objects, compile_text.ptx


@pytest.mark.parametrize("tuning", list(TUNINGS))
@pytest.mark.parametrize("form", list(FORMS))
def test_an_option_keeps_the_bits_of_both_off(tmp_path, ptxas, form, tuning):
    fmt, d, causal, n, block_m, _, work_items = CASE
    run = FORMS[form][0]
    base, base_ptx = _compile(tmp_path, ptxas, form, **OFF)
    tuned, ptx = _compile(tmp_path, ptxas, form, **{**OFF, **TUNINGS[tuning]})
    count = lambda text, pattern: len(re.findall(pattern, text))   # noqa: E731
    if "tile_rescale_skip" in TUNINGS[tuning]:      # one more subgroup vote: the skip's
        assert count(ptx, r"vote\.sync\.any") == count(base_ptx, r"vote\.sync\.any") + 1
        # P, converted before the skip's branch, reaches wgmma as it is: only Q (defined
        # before the key loop) passes through identity shuffles (lower_tile._held)
        identity = r"shfl\.sync\.bfly\.b32 %r\d+, %r\d+, 0, 31"
        assert count(ptx, identity) == count(base_ptx, identity)
    if "tile_copy_wait" in TUNINGS[tuning]:         # loads no longer wait for every copy
        wait_all = r"cp\.async\.wait_group 0;"
        assert count(ptx, wait_all) < count(base_ptx, wait_all)
        assert count(ptx, r"bar\.sync") > count(base_ptx, r"bar\.sync")
    for lead in (0, 32):
        want = check_attention(run, base, fmt, n, d, causal, block_m, work_items, HEADS, lead)
        got = check_attention(run, tuned, fmt, n, d, causal, block_m, work_items, HEADS, lead)
        assert np.array_equal(got, want), (lead, np.flatnonzero(got != want)[:8])
