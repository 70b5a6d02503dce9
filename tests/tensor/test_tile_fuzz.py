"""Differential fuzzing of tile kernels: random programs over the operations of tiles.md,
each compiled in every form the compiler has and run on the CPU models with the same
inputs. The forms must agree bit for bit (NaNs compared as NaNs):

- the replay (sm_80, --gpu-tile-mma=off), which defines the bits;
- registers in the mma fragment layout (sm_80, mma.sync; tile_frag.py);
- the wgmma form with A from registers (sm_90a; tile_wgmma.py);
- the wgmma form with loaded A tiles in workgroup memory (--gpu-tile-wgmma-a=shared).

Matmul operands are small integers, and a matmul accumulates only onto tiles that hold
integers, so every partial sum is exact and the tensor cores' summation order (which
tiles.md leaves open) cannot show. Programs mix elementwise arithmetic with scalars, row
vectors and tiles, maximum/minimum, fma, exp2, row reductions, masks (ragged rows and
columns, diagonals), 16-bit round trips, matmuls (b by rows or columns, with or without an
accumulator) and loops that carry a tile and reload the b tile each step. A generated
program the compiler refuses is a failure too: the generator only writes valid ones.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from .frag_sim import run_frag
from .test_tile_frag import compile_text, layout_remark
from .wgfrag_sim import WgFragSim

FORMS = {           # name -> (arch, compile options, model)
    "replay": ("sm_80", {"tile_mma": False}, "frag"),
    "mma": ("sm_80", {}, "frag"),
    "wgmma": ("sm_90a", {"tile_wgmma": True, "tile_wgmma_a": "registers"}, "wg"),
    "wgmma-ss": ("sm_90a", {"tile_wgmma": True, "tile_wgmma_a": "shared"}, "wg"),
}
SCALARS = ["0.5", "-1.25", "3.0", "0.0", "-0.0", "2.0e-3"]
# an input of 1e30 converts to an infinite f16 on purpose
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


class Program:
    """One random kernel `fz` and the shapes of its buffers."""

    def __init__(self, seed: int):
        self.seed = seed
        r = self.r = random.Random(seed)
        # (sizes kept small: the models run every work-item in Python) 128 rows are two
        # 16-row slabs per subgroup, in one workgroup; 64 rows, one slab, in one or two
        two = r.random() < 0.3
        self.R, self.K = (128 if two else 64), r.choice([16, 32])
        self.C = r.choice([16, 32] if two else [16, 32, 48])
        self.L = r.randint(1, 3)                    # loop trip count
        self.n = r.randint(self.R - 20, self.R if two else self.R + 20)
        self.col = r.random() < 0.5                 # the b tile read column-major
        self.lines: list[str] = []
        self.tiles: list[tuple[str, bool]] = []     # (name, holds integers)
        self.rows: list[str] = []
        self.count = 0
        self._body()

    # ---- the generator
    def _name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def _tile(self, integral=None) -> str:
        pool = [n for n, i in self.tiles if integral is None or i == integral]
        return self.r.choice(pool)

    def _operand(self) -> str:
        k = self.r.random()
        if k < 0.5:
            return self._tile()
        if k < 0.75 and self.rows:
            return self.r.choice(self.rows)
        return self.r.choice(SCALARS)

    def _expr(self) -> str:
        r, a = self.r, self._tile()
        kind = r.choice(["bin", "bin", "max", "min", "fma", "exp2", "neg", "mask", "round"])
        if kind == "bin":
            return f"{a} {r.choice('+-*')} {self._operand()}"
        if kind in ("max", "min"):
            return f"tile_{kind}({a}, {self._operand()})"
        if kind == "fma":
            return f"tile_fma({a}, {r.choice(SCALARS)}, {self._operand()})"
        if kind == "exp2":
            return f"tile_exp2(tile_min({a}, 8.0) * 0.75)"
        if kind == "neg":
            return f"-{a}"
        if kind == "mask":
            cols = r.choice([self.C, self.C - 3, 5])
            diag = r.choice(["", f", upper: {r.randint(-8, 8)}", f", lower: {r.randint(-8, 8)}",
                             ", upper: 0"])
            return f"tile_mask({a}, row0, 0, n, {cols}, fill: {r.choice(SCALARS)}{diag})"
        fmt = r.choice(["f16", "bf16"])
        return f"tile_convert(tile_convert({a}, to: {fmt}), to: f32)"

    def _matmul(self) -> str:
        acc = self._tile(integral=True) if self.r.random() < 0.6 else None
        return f"tensor_matmul(qa, kb{', ' + acc if acc else ''})"

    def _kb_load(self, row: str) -> str:
        if self.col:        # kb (K x C) read column-major: g holds C rows of K
            return (f"tile_load(g, 0, {row}, {self.K}, {self.C * (self.L + 1)}, "
                    f"ld: {self.K}, layout: col)")
        return f"tile_load(g, {row}, 0, {self.K * (self.L + 1)}, {self.C})"

    def _body(self) -> None:
        r, R, C, K = self.r, self.R, self.C, self.K
        out = self.lines
        out.append(f"    var row0: uint32 = block.x * {R};")
        out.append(f"    var t0: tile<f32, {R}, {C}> = tile_load(x, row0, 0, n, {C});")
        self.tiles.append(("t0", False))
        matmul = r.random() < 0.75
        if matmul:
            out.append(f"    var qa: tile<f16, {R}, {K}> = tile_load(h, row0, 0, n, {K});")
            out.append(f"    var kb: tile<f16, {K}, {C}> = {self._kb_load('0')};")
            out.append(f"    var m0: tile<f32, {R}, {C}> = tensor_matmul(qa, kb);")
            self.tiles.append(("m0", True))
        for _ in range(r.randint(3, 7)):
            k = r.random()
            if k < 0.2:
                name = self._name("r")
                fn = r.choice(["tile_row_max", "tile_row_sum"])
                out.append(f"    var {name}: tile<f32, {R}, 1> = {fn}({self._tile()});")
                self.rows.append(name)
            elif k < 0.35 and matmul:
                name = self._name("m")
                out.append(f"    var {name}: tile<f32, {R}, {C}> = {self._matmul()};")
                self.tiles.append((name, True))
            else:
                name = self._name("t")
                out.append(f"    var {name}: tile<f32, {R}, {C}> = {self._expr()};")
                self.tiles.append((name, False))
        # the loop carries a matmul's accumulator (K-loop style) or any tile
        carried = self._tile(integral=True) if matmul and r.random() < 0.7 else self._tile()
        integral = dict(self.tiles)[carried]
        out.append("    var i: uint32 = 0;")
        out.append(f"    while (i < {self.L}) {{")
        if matmul and integral:
            out.append(f"        {carried} = tensor_matmul(qa, kb, {carried});")
        else:
            out.append(f"        {carried} = {self._expr()};")
        if matmul:
            out.append(f"        kb = {self._kb_load(f'(i + 1) * {K}' if not self.col else f'(i + 1) * {C}')};")
        out.append("        i = i + 1;")
        out.append("    }")
        self.stored = [self._tile() for _ in range(2)]
        for j, name in enumerate(self.stored):
            out.append(f"    tile_store(o{j}, {name}, row0, 0, n, {C});")
        self.row_out = self.r.choice(self.rows) if self.rows else None
        if self.row_out:
            out.append(f"    tile_store(orow, {self.row_out}, row0, 0, n, 1);")

    # ---- the kernel and its inputs
    def source(self) -> str:
        return ("kernel(block = 128) fz(x: float32*, h: uint16*, g: uint16*, o0: float32*, "
                "o1: float32*, orow: float32*, n: uint32) {\n" + "\n".join(self.lines)
                + "\n}\n")

    def args(self) -> list:
        rng = np.random.default_rng(self.seed)     # the same inputs for every form
        n, C, K = self.n, self.C, self.K
        x = rng.uniform(-2, 2, (n, C)).astype(np.float32)
        x[rng.integers(0, n, 3), rng.integers(0, C, 3)] = [0.0, -0.0, 1e30]
        h = rng.integers(-3, 4, (n, K)).astype(np.float16)
        g = rng.integers(-3, 4, K * (self.L + 1) * C).astype(np.float16)
        poison = lambda m: np.full(m, np.nan, np.float32)   # noqa: E731
        return [("buf", "x", x.ravel()), ("buf", "h", h.view(np.uint16).ravel()),
                ("buf", "g", g.view(np.uint16)), ("buf", "o0", poison(n * C)),
                ("buf", "o1", poison(n * C)), ("buf", "orow", poison(n)), ("u32", n)]


def _run(form: str, prog: Program, tmp_path):
    arch, opts, model = FORMS[form]
    objects, explain = compile_text(tmp_path, prog.source(), arch=arch, **opts)
    remark = layout_remark(explain)
    grid = (-(-prog.n // prog.R), 1, 1)
    if model == "frag":
        mem = run_frag(objects, "fz", 128, prog.args(), grid=grid)
    else:
        mem = WgFragSim(objects, "fz").run(grid, 128, prog.args())
    outs = [mem.read(b).copy() for b in ("o0", "o1", "orow")]
    # one NaN pattern: tiles.md leaves a NaN result's payload open
    return [np.where(np.isnan(o), np.float32(np.nan), o).view(np.uint32) for o in outs], remark


SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_form_gives_the_replays_bits(tmp_path, seed):
    prog = Program(seed)
    want, _ = _run("replay", prog, tmp_path)
    for form in ("mma", "wgmma", "wgmma-ss"):
        got, remark = _run(form, prog, tmp_path)
        for name, g, w in zip(("o0", "o1", "orow"), got, want):
            bad = np.flatnonzero(g != w)
            assert not bad.size, (f"{form} differs from the replay in {name} at "
                                  f"{bad[:5]} ({remark})\n{prog.source()}")


def test_the_fuzzed_programs_reach_the_register_and_wgmma_forms(tmp_path):
    """The generator is not vacuous: most programs take the fast forms, the shared-A form
    reads some A tile from workgroup memory, and some loops run a matmul that reads the
    b tile the previous iteration reloaded."""
    forms = {"registers": 0, "wgmma": 0, "shared A": 0}
    loops = sum("= tensor_matmul(qa, kb," in Program(s).source().split("while")[1]
                for s in SEEDS)
    assert loops >= 4, loops
    for seed in SEEDS:
        prog = Program(seed)
        for form, key in (("mma", "registers"), ("wgmma", "wgmma"), ("wgmma-ss", "shared A")):
            arch, opts, _ = FORMS[form]
            _, explain = compile_text(tmp_path, prog.source(), arch=arch, **opts)
            remark = layout_remark(explain)
            forms[key] += {"registers": "held in registers" in remark,
                           "wgmma": "on wgmma" in remark,
                           "shared A": "A from shared tiles" in remark}[key]
    assert forms["registers"] >= 10 and forms["wgmma"] >= 7 and forms["shared A"] >= 7, forms
