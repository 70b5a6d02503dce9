"""Shared machinery of the optimizer's property tests: run a function on the inputs of
randprog.INPUTS through the interpreter, with %p pointing at 24 preset i64 cells."""
from __future__ import annotations

import struct

from tests.opt.interp import Machine, Trap


def execute(fn, inputs, fuel: int = 200_000):
    """(return value, the 24 cells) or ("trap", message)."""
    m = Machine(fuel=fuel)
    p = m.alloc(24 * 8)
    for k in range(24):
        struct.pack_into("<q", m.mem, p + 8 * k, k * 1000003 - 7)
    try:
        r = m.call(fn, [*inputs, p])
    except Trap as e:
        return ("trap", str(e))
    return (r, bytes(m.mem[p:p + 24 * 8]))
