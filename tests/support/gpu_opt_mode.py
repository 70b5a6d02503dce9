"""How the hardware suite compiles its kernels: `$METTLE_GPU_OPT` picks the optimisation level.

    plain             no -O (the default where a test does not ask for -O itself)
    plain-nocontract  no -O, --fp-contract=off
    O                 -O (contraction on, the GPU default)
    O-nocontract      -O --fp-contract=off: must give bitwise the same outputs as
                      `plain-nocontract` (contraction is the one documented difference)

`options(**kw)` returns driver Options with the mode applied over what the test asked for.
Run the suite once per mode with `$METTLE_GPU_RECORD` set (harness.py writes a digest of
every output buffer) and compare the records with tests/gpu/compare_records.py: that is the
check that -O changes no result except by documented contraction.
"""
from __future__ import annotations

import os

from toolchain.compiler.driver import Options

MODES = {"plain": {"optimize": False}, "plain-nocontract": {"optimize": False,
                                                           "fp_contract": False},
         "O": {"optimize": True}, "O-nocontract": {"optimize": True, "fp_contract": False}}


def optimizing(default: bool = False) -> bool:
    """Whether this run's kernels are compiled with -O (the mode's choice, else `default`)."""
    mode = os.environ.get("METTLE_GPU_OPT")
    return MODES[mode]["optimize"] if mode in MODES else default


def options(**kw) -> Options:
    mode = os.environ.get("METTLE_GPU_OPT")
    if mode:
        if mode not in MODES:
            raise ValueError(f"METTLE_GPU_OPT={mode!r}: expected one of {sorted(MODES)}")
        kw.update(MODES[mode])
    return Options(**kw)
