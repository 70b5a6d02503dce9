"""The kernel tests/data/kernels/aggregates.mettle (struct values in device code) and its
expected outputs, shared by the PoCL run (tests/ptx/test_aggregates.py) and the hardware
run (tests/gpu/test_aggregates.py). Every value is exact in float32 for n <= 1500, so the
oracle holds under any contraction of multiply-adds."""
from __future__ import annotations

from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parents[1] / "data" / "kernels" / "aggregates.mettle"
KERNEL = "aggregates"
OUTPUTS = 4          # per work item, in each of `out` (float32) and `iout` (int64)


def expected(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(out, iout) as the kernel writes them for work items 0..n-1."""
    assert n <= 1500, "beyond this the float32 products stop being exact"
    out = np.zeros(n * OUTPUTS, np.float32)
    iout = np.zeros(n * OUTPUTS, np.int64)
    for i in range(n):
        ax, ay, az = float(i), 2.0 * i, 3.0 * i
        bx, by, bz = ax * 0.5, ay * 0.5, az * 0.5
        area = (6.75, bx * by, float(i), 0.0)[i % 4]
        out[i * 4:i * 4 + 4] = (ax * bx + ay * by + az * bz, area, bz + i, ax + 100.0 + i)
        iout[i * 4:i * 4 + 4] = (i * 1000000000 + 1, 2 * i + ((i & 255) + 3) % 256,
                                 i % 2, 7 * i if i % 3 == 0 else -1)
    return out, iout
