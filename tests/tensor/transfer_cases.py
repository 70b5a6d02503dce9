"""tensor_transfer_workgroup test cases: a round-trip kernel generator and a numpy oracle.

The kernel loads one tile global -> workgroup (zero fill outside the tensor), dumps the
workgroup tile to `tile_out` so a test sees exactly what was loaded, then stores the tile
workgroup -> global into `dst` at the same coordinates (elements outside are discarded).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NP = {"u8": np.uint8, "i8": np.int8, "f16": np.float16, "bf16": np.uint16, "u16": np.uint16,
      "f32": np.float32, "i32": np.int32, "u32": np.uint32, "f64": np.float64,
      "i64": np.int64, "u64": np.uint64}
CARRIER = {"u8": "uint8", "i8": "int8", "f16": "uint16", "bf16": "uint16", "u16": "uint16",
           "f32": "float32", "i32": "int32", "u32": "uint32", "f64": "float64",
           "i64": "int64", "u64": "uint64"}


@dataclass(frozen=True)
class Case:
    name: str
    element: str
    extents: tuple           # elements, dimension 0 fastest
    tiles: tuple
    element_strides: tuple
    coords: tuple            # signed box origin
    pad: int = 0             # extra elements per dimension-0 row (pitch > extent)

    @property
    def rank(self) -> int:
        return len(self.extents)

    @property
    def size(self) -> int:
        return np.dtype(NP[self.element]).itemsize

    @property
    def pitches(self) -> tuple:
        """Elements between consecutive indices of each dimension (dimension 0: 1)."""
        out, p = [], 1
        for d, e in enumerate(self.extents):
            out.append(p)
            p *= e + (self.pad if d == 0 else 0)
        return tuple(out)

    @property
    def strides(self) -> tuple:
        return tuple(p * self.size for p in self.pitches)

    @property
    def total(self) -> int:
        return self.pitches[-1] * self.extents[-1]

    @property
    def tile_elements(self) -> int:
        return int(np.prod(self.tiles))


def kernel(c: Case, view: bool = True, inferred: bool = False) -> str:
    """The round-trip kernel; `inferred` leaves `direction:` to the operands' spaces."""
    t = CARRIER[c.element]
    dims = []
    for d in range(c.rank):
        dims.append(f"extent{d}: {c.extents[d]}, tile{d}: {c.tiles[d]}, "
                    f"element_stride{d}: {c.element_strides[d]}, coordinate{d}: c{d}"
                    + (f", stride{d}: {c.strides[d]}" if d else ""))
    geo = ",\n      ".join(dims)
    coords = ", ".join(f"c{d}: int32" for d in range(c.rank))
    vin, vout = (", view: vin", ", view: vout") if view else ("", "")
    n = c.tile_elements
    load, store = ("", "") if inferred else ("direction: load, ", "direction: store, ")
    return f"""kernel(block = 128) {c.name}(src: {t}*, dst: {t}*, tile_out: {t}*, vin: uint8*,
    vout: uint8*, {coords}) {{
  workgroup var tile: {t}[{n}];
  tensor_transfer_workgroup(&tile[0], src, rank: {c.rank}, element: {c.element},
      {load}{geo}{vin});
  for (var i: int32 = (int32)thread.x; i < {n}; i += 128) {{ tile_out[i] = tile[i]; }}
  barrier(workgroup, acq_rel);
  tensor_transfer_workgroup(dst, &tile[0], rank: {c.rank}, element: {c.element},
      {store}{geo}{vout});
}}
"""


def _box(c: Case):
    """(flat tile index, flat global index or -1 when out of bounds) for every element."""
    idx = np.indices(tuple(reversed(c.tiles))).reshape(c.rank, -1)[::-1]   # dim 0 fastest
    flat_g = np.zeros(idx.shape[1], dtype=np.int64)
    inb = np.ones(idx.shape[1], dtype=bool)
    for d in range(c.rank):
        g = c.coords[d] + idx[d].astype(np.int64) * c.element_strides[d]
        inb &= (g >= 0) & (g < c.extents[d])
        flat_g += g * c.pitches[d]
    return np.where(inb, flat_g, -1)


def expected(c: Case, src: np.ndarray, dst_poison: np.ndarray):
    """(tile after the load, dst after the store)."""
    g = _box(c)
    tile = np.zeros(c.tile_elements, dtype=src.dtype)
    tile[g >= 0] = src[g[g >= 0]]
    dst = dst_poison.copy()
    dst[g[g >= 0]] = tile[g >= 0]
    return tile, dst


CASES = [
    Case("rank1", "f32", (1000,), (64,), (1,), (-16,)),
    Case("rank2", "f16", (100, 40), (32, 8), (1, 1), (80, -3), pad=4),
    Case("rank3", "f32", (24, 10, 6), (8, 4, 3), (1, 2, 1), (20, 3, 4)),
    Case("rank5", "u8", (32, 5, 4, 3, 2), (16, 2, 2, 2, 1), (1, 1, 2, 1, 1), (24, 4, 1, 2, 1)),
]
