"""Which PTX tensor instruction family executes a neutral descriptor, or a refusal.

`select_wmma(desc, profile, span)` returns a `WmmaPlan`: the physical WMMA shape, the grid
of physical tiles covering the logical M x N, the number of K chunks, and the register
counts of every fragment. It never truncates the logical tile or changes precision,
layout, rounding, overflow or scope: anything it cannot execute exactly is refused with
E0504 (naming the PTX ISA and target it needs, via PtxProfile.need: the ISA and SM of
each family's `wmma.<family>` row of isa.py) or, when no PTX
profile of this backend can run it, E0505. The family table below is the stable WMMA list
of gpu.md; fragment sizes are PTX ISA "Matrix fragments for WMMA" per (type, shape).
"""
from __future__ import annotations

from dataclasses import dataclass

from ....diagnostics import error
from ....ir import tensor as T

# family -> ({physical shape: (a regs, b regs)}, grid base (m, n) or None); the family
# is available where the profile has the feature `wmma.<family>` (isa.py)
_F16_SHAPES = {(16, 16, 16): (8, 8), (8, 32, 16): (8, 8), (32, 8, 16): (8, 8)}
_BF16_SHAPES = {(16, 16, 16): (4, 4), (8, 32, 16): (2, 8), (32, 8, 16): (8, 2)}
_I8_SHAPES = {(16, 16, 16): (2, 2), (8, 32, 16): (1, 4), (32, 8, 16): (4, 1)}
FAMILIES = {
    "f16": (_F16_SHAPES, (16, 16)),
    "bf16": (_BF16_SHAPES, (16, 16)),
    "tf32": ({(16, 16, 8): (4, 4)}, (16, 16)),
    "f64": ({(8, 8, 4): (1, 1)}, (8, 8)),
    "i8": (_I8_SHAPES, (16, 16)),
    "u8": (_I8_SHAPES, (16, 16)),
    "i4": ({(8, 8, 32): (1, 1)}, None),
    "u4": ({(8, 8, 32): (1, 1)}, None),
    "b1": ({(8, 8, 128): (1, 1)}, None),
}
PTX_TYPE = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "f32": "f32", "f64": "f64",
            "i8": "s8", "u8": "u8", "i4": "s4", "u4": "u4", "b1": "b1", "i32": "s32"}
MAX_LOGICAL = 256
F64_ROUNDING = {"default": "rn", "nearest_even": "rn", "toward_zero": "rz", "down": "rm",
                "up": "rp"}


@dataclass(frozen=True)
class WmmaPlan:
    family: str
    shape: tuple[int, int, int]       # physical m, n, k
    grid: tuple[int, int]             # physical tiles along M and N
    chunks: int                       # physical K steps of a whole tile
    a_regs: int
    b_regs: int
    c_regs: int                       # accumulator fragment registers (input C)
    d_regs: int                       # result fragment registers

    @property
    def shape_name(self) -> str:
        m, n, k = self.shape
        return f"m{m}n{n}k{k}"


def _acc_regs(fmt: str, shape) -> int:
    if fmt == "f64" or shape[0] == shape[1] == 8:
        return 2
    return 4 if fmt == "f16" else 8


def refuse(desc, why: str, span):
    return error("E0505", f"the PTX backend cannot execute this tensor descriptor {desc}: "
                 f"{why}", span)


def _family(desc: T.TensorDesc, span) -> str:
    a, b, acc, res = desc.a_type, desc.b_type, desc.accumulator_type, desc.result_type
    if a != b:
        raise refuse(desc, f"WMMA needs matching A/B formats, found {a} and {b}", span)
    fam = a
    if fam not in FAMILIES:
        raise refuse(desc, f"{a} inputs have no WMMA form", span)
    want = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "f64": ("f64",)}
    allowed = want.get(fam, ("i32",))
    if acc not in allowed or res not in allowed:
        raise refuse(desc, f"{fam} inputs accumulate in {' or '.join(allowed)}, not "
                     f"{acc}/{res}", span)
    if fam != "f16" and acc != res:
        raise refuse(desc, "accumulator and result formats must agree", span)
    return fam


def _check_modes(desc: T.TensorDesc, fam: str, span) -> None:
    if desc.sparse or desc.scaled:
        raise refuse(desc, "structured sparsity and block scaling are not WMMA "
                     "operations", span)
    if desc.rounding != "default" and fam != "f64":
        raise refuse(desc, f"`rounding: {desc.rounding}` is selectable only for f64", span)
    if desc.overflow == "saturate_finite" and fam in ("f64", "bf16", "tf32", "f16"):
        raise refuse(desc, "`overflow: saturate_finite` applies to integer MMA only", span)
    if fam in ("i4", "u4", "b1") and (desc.stored_layout("a"), desc.stored_layout("b")) \
            != ("row", "col"):
        raise refuse(desc, f"{fam} WMMA needs A row-major and B column-major (after "
                     "transpose)", span)
    if desc.math != "multiply_add" and fam != "b1":
        raise refuse(desc, f"`math: {desc.math}` needs b1 inputs", span)


class _AnyProfile:
    """A profile answering yes to every capability question: checks a descriptor against
    the WMMA tables on a profile that will replay it instead (replay.replaces_native)."""

    def has(self, feature) -> bool:
        return True

    def need(self, *args, **kw) -> None:
        return None


ANY_PROFILE = _AnyProfile()


def select_wmma(desc: T.TensorDesc, profile, span, grid_ok: bool = True) -> WmmaPlan:
    fam = _family(desc, span)
    _check_modes(desc, fam, span)
    shapes, base = FAMILIES[fam]
    profile.need(f"wmma.{fam}", f"{fam} tensor MMA (WMMA)", span)
    if desc.math == "and_popcount":
        profile.need("wmma.b1.and", "b1 AND-popcount MMA", span)
    m, n, k = desc.m, desc.n, desc.k
    for (pm, pn, pk), (ar, br) in shapes.items():
        if (m, n) == (pm, pn) and k % pk == 0 and (base is not None or k == pk):
            return WmmaPlan(fam, (pm, pn, pk), (1, 1), k // pk, ar, br,
                            _acc_regs(desc.accumulator_type, (pm, pn)),
                            _acc_regs(desc.result_type, (pm, pn)))
    if base is not None and grid_ok:
        pm, pn = base
        pk = next(s[2] for s in shapes if s[:2] == base)
        ar, br = shapes[(pm, pn, pk)]
        if m % pm == 0 and n % pn == 0 and k % pk == 0 and m <= MAX_LOGICAL \
                and n <= MAX_LOGICAL:
            return WmmaPlan(fam, (pm, pn, pk), (m // pm, n // pn), k // pk, ar, br,
                            _acc_regs(desc.accumulator_type, (pm, pn)),
                            _acc_regs(desc.result_type, (pm, pn)))
    shapes_txt = ", ".join(f"m{a}n{b}k{c}" for a, b, c in shapes)
    grid_txt = f" or exact {base[0]}x{base[1]} grids up to {MAX_LOGICAL}x{MAX_LOGICAL}" \
        if base else ""
    raise refuse(desc, f"{fam} WMMA shapes are {shapes_txt}{grid_txt} (K a multiple of the "
                 "physical K)", span)
