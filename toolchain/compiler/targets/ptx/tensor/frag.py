"""Per-lane fragment maps of warp-level `mma.sync` / `mma.sp` operands, and their loads.

A `FragSpec` is the PTX ISA fragment equation of one operand ("Matrix Fragments for
mma.m16n8k16/k32", "for mma.sp"), written once as data: with groupID = laneid >> 2 and
tig = laneid & 3, a lane's element i sits at logical (row, col) =
  (gid + dr_i, tig*w + dc_i)   for an "a"-kind map (A, C, D: rows follow groupID), or
  (tig*w + dr_i, gid + dc_i)   for a "b"-kind map (B: columns follow groupID).
Elements are packed `per` to a 32-bit register, element 0 in the least significant bits.

Loads are per element from the operand's own stored layout and leading dimension (a
transpose is already folded into `Mat.layout`), so every layout, transpose and runtime
stride is exact and no alignment is assumed. Byte offsets of the static (dr, dc) deltas are
memoised per operand (`Offsets`), so a runtime K loop computes them once, before the loop.
Fragment registers never leave targets/ptx/tensor/.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ops as I
from .common import Mat, add_addr, linear, offset_terms, scale_bytes


@dataclass(frozen=True)
class FragSpec:
    kind: str                               # "a" (rows follow gid) or "b" (cols follow gid)
    w: int                                  # tig multiplier
    elems: tuple[tuple[int, int], ...]      # (dr, dc) per element, in register order
    per: int                                # elements per 32-bit register (1, 2 or 4)

    @property
    def regs(self) -> int:
        return len(self.elems) // self.per


def make_spec(kind, w, per, fn, count) -> FragSpec:
    return FragSpec(kind, w, tuple(fn(i) for i in range(count)), per)


# 8-bit A/B of m16n8k32 and m16n8k16 (PTX ISA: .s8/.u8/.e4m3/.e5m2 fragments)
A8_K32 = make_spec("a", 4, 4, lambda i: (8 * ((i >> 2) & 1), (i & 3) + 16 * (i >> 3)), 16)
B8_K32 = make_spec("b", 4, 4, lambda i: ((i & 3) + 16 * (i >> 2), 0), 8)
A8_K16 = make_spec("a", 4, 4, lambda i: (8 * (i >> 2), i & 3), 8)
B8_K16 = make_spec("b", 4, 4, lambda i: (i, 0), 4)
# 16-bit B of m16n8k16, compressed 16x8 A of mma.sp m16n8k16 (the dense m16n8k8 A map)
B16_K16 = make_spec("b", 2, 2, lambda i: ((i & 1) + 8 * (i >> 1), 0), 4)
A16_SPARSE = make_spec("a", 2, 2, lambda i: (8 * (i >> 1), i & 1), 4)
# f32 C/D of every m16n8 shape
ACC_F32 = make_spec("a", 2, 1, lambda i: (8 * (i >> 1), i & 1), 4)


@dataclass
class Lane:
    gid: str
    tig: str


def lane_ids(em) -> Lane:
    lane, gid, tig = em.new("r"), em.new("r"), em.new("r")
    em.put(I.mov("u32", lane, "%laneid"), I.binary("shr", "u32", gid, lane, 2),
           I.binary("and", "b32", tig, lane, 3))
    return Lane(gid, tig)


class Offsets:
    """Memoised byte offsets of static logical deltas within one operand view."""

    def __init__(self, em, m: Mat):
        self.em, self.m, self.memo = em, m, {}

    def get(self, dr: int, dc: int) -> int | str:
        key = (dr, dc)
        if key not in self.memo:
            self.memo[key] = scale_bytes(self.em, linear(self.em, offset_terms(self.m, dr, dc)),
                                         self.m.bits)
        return self.memo[key]


def lane_base(em, spec: FragSpec, lane: Lane, m: Mat, base: str) -> str:
    """Address of this lane's (dr, dc) = (0, 0) element of the subtile at `base`."""
    scaled = em.new("r")
    em.put(I.binary("shl", "b32", scaled, lane.tig, spec.w.bit_length() - 1))
    r, c = (lane.gid, scaled) if spec.kind == "a" else (scaled, lane.gid)
    return add_addr(em, base, scale_bytes(em, linear(em, offset_terms(m, r, c)), m.bits))


def element_addrs(em, spec: FragSpec, offs: Offsets, base: str, dr0: int = 0,
                  dc0: int = 0) -> list[str]:
    """Per-element addresses of a fragment whose lane (0, 0) element is at `base`, moved by
    the static subtile delta (dr0, dc0)."""
    return [add_addr(em, base, offs.get(dr0 + dr, dc0 + dc)) for dr, dc in spec.elems]


def _pack(em, parts: list[str], per: int) -> str:
    out = em.new("r")
    if per == 2:
        em.put(I.mov("b32", out, I.vec(parts[0], parts[1])))
        return out
    lo, hi = em.new("r"), em.new("r")
    em.put(I.prmt(lo, parts[0], parts[1], "0x3340"), I.prmt(hi, parts[2], parts[3], "0x3340"),
           I.prmt(out, lo, hi, "0x5410"))
    return out


def load_packed(em, spec: FragSpec, space: str, addrs: list[str]) -> list[str]:
    """Load 8- or 16-bit elements and pack them `per` to a 32-bit register."""
    vals = []
    for a in addrs:
        if spec.per == 4:
            v = em.new("r")
            em.put(I.ld(space, "u8", v, I.mem(a)))
        else:
            v = em.new("rs")
            em.put(I.ld(space, "b16", v, I.mem(a)))
        vals.append(v)
    return [_pack(em, vals[i:i + spec.per], spec.per) for i in range(0, len(vals), spec.per)]


def load_acc(em, space: str, addrs: list[str]) -> list[str]:
    out = []
    for a in addrs:
        f = em.new("f")
        em.put(I.ld(space, "f32", f, I.mem(a)))
        out.append(f)
    return out


def store_acc(em, space: str, addrs: list[str], regs: list[str]) -> None:
    for a, f in zip(addrs, regs):
        em.put(I.st(space, "f32", I.mem(a), f))
