"""The kernel tests/data/kernels/aggregates.mettle (struct values in device code) and its
expected outputs, shared by the PoCL run (tests/ptx/test_aggregates.py) and the hardware
run (tests/gpu/test_aggregates.py); and MIXED_SOURCE, struct locals with fields of mixed
widths and a tagged enum (tests/ptx/test_promote.py runs it on the CPU PTX interpreter). Every value is exact in float32 for n <= 1500, so the
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


MIXED_SOURCE = """
struct Vec3 { x: float32; y: float32; z: float32; }
struct Mixed { a: int64; b: int32; c: uint8; d: bool; e: int8; }
enum Shape { Circle(float32), Rect(Vec3), Empty }
kernel k(out: float32*, iout: int64*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i >= n) { return; }
    var a: Vec3;
    a.x = (float32)i; a.y = 2.0; a.z = 0.5;
    var b: Vec3 = a;
    b.x = b.x + 1.0;
    var m: Mixed;
    m.a = (int64)i * 3; m.b = i - 7; m.c = (uint8)(i * 37); m.d = i % 3 == 0; m.e = (int8)(i * 5);
    var m2: Mixed = m;
    m2.c = m2.c + 200;
    var s: Shape = Empty;
    if (i % 3 == 1) { s = Circle(1.5); }
    if (i % 3 == 2) { s = Rect(b); }
    var area: float32 = 0.0;
    match (s) {
        case Circle(r): { area = r * r; }
        case Rect(v): { area = v.x * v.y; }
        case Empty: { area = -1.0; }
    }
    out[i * 3] = a.x + b.x;
    out[i * 3 + 1] = area;
    out[i * 3 + 2] = b.z;
    iout[i * 3] = m.a + (int64)m.b;
    iout[i * 3 + 1] = (int64)m2.c + (int64)m.c * 1000;
    iout[i * 3 + 2] = (int64)m2.d + (int64)m2.e * 10;
}
"""


def mixed_expected(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(out, iout) of MIXED_SOURCE's kernel `k` for work items 0..n-1."""
    out, iout = [], []
    for i in range(n):
        c, e = (i * 37) & 255, ((i * 5 + 128) & 255) - 128
        out += [2.0 * i + 1.0, (-1.0, 2.25, (i + 1.0) * 2.0)[i % 3], 0.5]
        iout += [3 * i + i - 7, (c + 200) % 256 + c * 1000, (i % 3 == 0) + e * 10]
    return np.array(out, np.float32), np.array(iout, np.int64)
