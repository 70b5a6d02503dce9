"""CPU oracles for the memory suite's atomics kernels (tests/data/gpu_suite/memory.mettle),
shared by the CUDA hardware tests and the OpenCL (SPIR-V) execution tests."""
from __future__ import annotations

import numpy as np

# counters[0..7] before atomics_u32 runs: add, max, min, xor, or, and, sub, CAS target.
U32_INITIAL = np.array([5, 0, 0xFFFFFFFF, 0x12345678, 0, 0xFFFFFFFF, 100000, 9], np.uint32)


def check_u32_atomics(counters: np.ndarray, olds: np.ndarray, values: np.ndarray) -> None:
    """Every contended RMW landed once, and fetch_add returned distinct prefix sums."""
    n = values.size
    c, u = counters, values.astype(np.uint64)
    assert c[0] == (5 + int(u.sum())) % 2**32
    assert c[1] == values.max() and c[2] == values.min()
    assert c[3] == np.bitwise_xor.reduce(values, initial=np.uint32(0x12345678))
    assert c[4] == np.bitwise_or.reduce(values & 255)
    assert c[5] == np.bitwise_and.reduce(values | np.uint32(0xFFFF0000))
    assert c[6] == (100000 - n) % 2**32
    assert c[7] == 9 + n                      # every CAS loop incremented exactly once
    order = np.argsort(olds, kind="stable")   # sorted olds + their values tile the range
    sums = (5 + np.concatenate([[0], np.cumsum(u[order])[:-1]])) % 2**32
    np.testing.assert_array_equal(olds[order], sums.astype(np.uint32))


def check_u64_atomics(counters: np.ndarray, values: np.ndarray, workgroups: int) -> None:
    """atomics_u64: workgroup partial sums/maxima folded into global counters."""
    assert int(counters[0]) == int(values.astype(object).sum()) % 2**64
    assert counters[1] == values.max() and counters[2] == workgroups
    assert counters[3] in set(values.tolist())
