"""A kernel whose struct local is read before (some lanes) write it: every lane must see
zeros (docs/reference/host_semantics.md), on PTX and SPIR-V alike. Shared by the PoCL and GPU tests."""
from __future__ import annotations

SOURCE = """struct In { k: int8; w: uint16; }
struct P { a: int32; b: int64; c: float32; d: uint8; e: float64; n: In; q: int32*; }
kernel zero_locals(out: int64*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) {
        var p: P;
        if (i % 3 == 1) { p.a = 5; p.n.w = 7; }
        var t: int64 = p.a + p.b + (int64)p.c + p.d + (int64)p.e + p.n.k + p.n.w;
        if (p.q == 0) { t = t + 1000; }
        out[i] = t;
    }
}
"""
N = 128
BLOCK = 64


def expected() -> list[int]:
    return [1000 + (12 if i % 3 == 1 else 0) for i in range(N)]
