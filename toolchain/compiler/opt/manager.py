"""The optimizer pipeline: the only place that sets pass order (STYLE.md §2).

Passes are plain functions `pass(fn) -> bool` (True iff the IR changed). GPU `-O` runs only
target-neutral passes over kernel-reachable functions (gpu.md "Building"). The manager, not
the passes, owns verification.
"""
from __future__ import annotations

from ..ir import Module, device_program, verify_function

PIPELINE: tuple = ()


def optimize(module: Module, gpu: bool, verify_each: bool = False) -> bool:
    functions = device_program(module).functions if gpu else \
        [f for f in module.functions.values() if not f.is_extern]
    changed = False
    for p in PIPELINE:
        for fn in functions:
            if p(fn):
                changed = True
                if verify_each:
                    verify_function(fn)
    return changed
