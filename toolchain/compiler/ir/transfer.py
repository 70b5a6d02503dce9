"""The neutral descriptor of `tensor_transfer_workgroup` (gpu.md "Multidimensional tensor
transfers"): one rank-1..5 rectangular tile moved between global and workgroup storage.

Only logical facts live here: the global tensor's extents (elements) and byte strides
(dimension 0 is contiguous, so its stride is the element size), the tile's extents, the
per-dimension element strides (every element_stride-th element is taken), the element
format, the direction, and the out-of-bounds rule (`zero`: a load fills elements outside
the tensor with zero, a store discards them). The tile is dense in workgroup memory with
dimension 0 fastest. Coordinates (signed, run-time, workgroup-uniform) and the optional
`view` acceleration token are operands. No tensor map, barrier or proxy appears here: that
is the PTX backend's business, and replay is always exact.
"""
from __future__ import annotations

from dataclasses import dataclass

from .types import F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, Type

ELEMENTS: dict[str, Type] = {"u8": U8, "i8": I8, "f16": U16, "bf16": U16,
                             "u16": U16, "i16": I16, "f32": F32, "i32": I32,
                             "u32": U32, "f64": F64, "i64": I64, "u64": U64}
DIRECTIONS = {"load": "global_to_workgroup", "global_to_workgroup": "global_to_workgroup",
              "store": "workgroup_to_global", "workgroup_to_global": "workgroup_to_global"}
MAX_RANK = 5
MAX_ELEMENT_STRIDE = 8
ROLE_COORDS = tuple(f"coordinate{d}" for d in range(MAX_RANK))


@dataclass(frozen=True)
class TransferDesc:
    rank: int
    element: str
    direction: str                  # global_to_workgroup | workgroup_to_global
    extents: tuple[int, ...]
    strides: tuple[int, ...]        # bytes; strides[0] is the element size
    tiles: tuple[int, ...]
    element_strides: tuple[int, ...]
    bounds: str = "zero"
    scope: str = "workgroup"

    @property
    def element_bytes(self) -> int:
        return ELEMENTS[self.element].size

    @property
    def tile_elements(self) -> int:
        n = 1
        for t in self.tiles:
            n *= t
        return n

    @property
    def tile_bytes(self) -> int:
        return self.tile_elements * self.element_bytes

    @property
    def loads(self) -> bool:
        return self.direction == "global_to_workgroup"

    def __str__(self) -> str:
        dims = " ".join(f"[{e}/{s}B tile {t}x{es}]" for e, s, t, es in
                        zip(self.extents, self.strides, self.tiles, self.element_strides))
        return f"<rank{self.rank} {self.element} {self.direction} {dims} {self.bounds}>"


def validate_transfer(desc: TransferDesc) -> list[tuple[str, str]]:
    """(option, message) for every rule the descriptor breaks; empty when valid."""
    errs: list[tuple[str, str]] = []
    if not 1 <= desc.rank <= MAX_RANK:
        return [("rank", f"`rank:` must be 1 to {MAX_RANK}, not {desc.rank}")]
    size = desc.element_bytes
    if desc.strides[0] != size:
        errs.append(("stride0", f"dimension 0 is contiguous: `stride0:` must be the element "
                     f"size, {size} bytes, not {desc.strides[0]}"))
    for d in range(1, desc.rank):
        if desc.strides[d] % size:
            errs.append((f"stride{d}", f"`stride{d}:` ({desc.strides[d]} bytes) must be a "
                         f"multiple of the {size}-byte element"))
    for d, es in enumerate(desc.element_strides):
        if not 1 <= es <= MAX_ELEMENT_STRIDE:
            errs.append((f"element_stride{d}", f"`element_stride{d}:` must be 1 to "
                         f"{MAX_ELEMENT_STRIDE}, not {es}"))
    if desc.bounds != "zero":
        errs.append(("bounds", "`bounds:` must be zero"))
    return errs
