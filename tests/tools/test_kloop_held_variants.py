"""bench/kloop_held.py's variants compile without a GPU and are the forms their labels name
(the H200 call is too scarce to find a broken variant there): the undeclared K loop staged
with the declared form's 8 KiB area, the earlier 16 KiB sizing, hoisted lane offsets, the
synchronous and unstaged forms, and the declared yardstick."""
from __future__ import annotations

import re

from tests.tools.test_bench_variants import _load
from toolchain.compiler.targets.ptx.tensor import staging


def _area(ptx: str) -> int:
    return sum(int(n) for n in re.findall(r"_wmma_(?:pipe|stage)\w*\[(\d+)\];", ptx))


def test_kloop_held_variants_compile_for_sm_90a():
    bench = _load("kloop_held")
    mods = {label: mod.ptx for label, (mod, _) in bench.variants("sm_90a").items()}
    assert _area(mods["held -O"]) == _area(mods["declared -O"]) == 8192
    assert "launch-guarded subgroups<=4" in mods["held -O"]
    assert _area(mods["held -O 16KiB-area"]) == 16384
    assert "launch-guarded subgroups<=8" in mods["held -O 16KiB-area"]
    assert _area(mods["held -O sync-staging"]) == 4096
    assert "staged pipelined" not in mods["held -O sync-staging"]
    assert _area(mods["held -O no-staging"]) == _area(mods["held plain"]) == 0
    assert mods["held -O hoisted"] != mods["held -O"]
    # the patched module state is restored after each variant
    assert staging.PIPELINE and not staging.HOIST_OFFSETS
    assert staging.subgroups_hint.__module__.endswith("block_hint")
