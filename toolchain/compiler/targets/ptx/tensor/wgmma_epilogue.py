"""The fused epilogue of a tensor.matmul region on PTX (attrs["epilogue"],
ir/tensor.matmul_epilogue; docs/reference/gemm.md "Fused epilogue").

For every in-range element of the region (row + r < M, column + c < N):
t = C + A*B (the f32/f64 sum, before D's rounding), then tensor_epilogue's arithmetic in
its order (epilogue.py: t = alpha*t; t = t + beta*bias[row, column] with beta*bias rounded
first; ReLU / clamp), then D's one rounding. The bias is a whole vector or matrix indexed
by the global row and column, like C and D. Elements outside M and N are neither read nor
written (bias included).

Every PTX path applies exactly the same instructions to the same f32 value, so they agree
bit for bit on the epilogue: `mul.rn`/`add.rn` (the `.rn` forbids ptxas from contracting a
multiply and an add into an FMA), `setp`/`selp` for the activation, `cvt.rn` for the
rounding:
- the sm_90a pipeline (wgmma.py) applies them to the accumulator registers after adding C,
  reading the bias through the wgmma accumulator mapping (NativeBias), no memory pass;
- a split region with an f16/bf16 result is exact replay: applied to each element's f32
  sum before its rounded store (replay_k_loop);
- a split region or subgroup region with an f32/f64 result stores D = C + A*B exactly,
  and its own subgroup then re-reads each in-range element, applies the epilogue and
  stores it (memory_pass): an f32/f64 store and load are exact, so this equals applying
  it to the register.
"""
from __future__ import annotations

from .. import ops as I
from .common import Mat, elem_addr, operands
from .epilogue import _apply, _bias_view, _scaled_bias
from .replay import Region, _k_loop, replay


class Fused:
    """One tensor.matmul's fused epilogue: its EpilogueDesc and operands."""

    def __init__(self, em, ins):
        self.desc = ins.attrs["epilogue"]
        self.ops = operands(ins)
        self.fmt = self.desc.element_type
        self.ty = "f64" if self.fmt == "f64" else "f32"
        self.bias = _bias_view(em, self.desc, self.ops, self.fmt) \
            if "bias" in self.ops else None

    def apply(self, em, t: str, bias=None) -> None:
        """t = act(alpha*t + bias()) in place (`bias` returns the beta-scaled value)."""
        _apply(em, self.desc, self.ops, t, self.ty, bias)

    def apply_at(self, em, t: str, row: str, col: str) -> None:
        """The epilogue of the element at global (row, col), its bias read from memory."""
        bias = None
        if self.bias is not None:
            def bias():
                return _scaled_bias(em, self.desc, self.ops, self.bias,
                                    elem_addr(em, self.bias, row, col), self.ty)
        self.apply(em, t, bias)

    def replay_k_loop(self):
        """A replay K loop that ends with the epilogue on the f32 sum (before rounding)."""
        def run(em, g, gr, gc, q0, acc):
            _k_loop(em, g, gr, gc, q0, acc)
            self.apply_at(em, acc, gr, gc)
        return run

    def memory_pass(self, em, g: Region) -> None:
        """The subgroup re-reads its region's in-range D (exact f32/f64), applies the
        epilogue and stores it: the replay loop with D as its start and the epilogue as
        its K loop; entry- and exit-ordered for the live lanes."""
        assert self.fmt in ("f32", "f64"), "16-bit results take the epilogue in replay"
        mask = em.new("r")
        em.put(I.activemask(mask), I.bar_warp_sync(mask))
        replay(em, g, 0, init_from_d=True,
               k_loop=lambda em, g, gr, gc, q0, t: self.apply_at(em, t, gr, gc))
        em.put(I.bar_warp_sync(mask))


class NativeBias:
    """The bias of the sm_90a epilogue, read through the wgmma accumulator mapping: a
    thread holds rows `row` (one per half) and column pairs c0 + 8j, c0 + 8j + 1. A row
    bias is one value per half; column and matrix biases are two per pair, loaded with the
    batch's C (before its D stores: ptxas cannot move a load above a possibly aliasing
    store) under the columns' own M/N predicates, so nothing outside the problem is read."""

    def __init__(self, em, fused: Fused):
        self.f, self.mode = fused, fused.desc.bias_mode
        self.m: Mat = fused.bias
        self.bytes = self.m.bits // 8

    @property
    def per_pair(self) -> bool:
        return self.mode in ("column", "matrix")

    def start_half(self, em, row: str, c0: str, pred: str | None = None) -> None:
        """Base address of this half's first pair (or the row's value, scaled; `pred`:
        read only where it holds, the row being in range)."""
        self.row = row
        if self.mode == "row":
            raw = self._load(em, pred, elem_addr(em, self.m, row, 0))
            self.value = self._widen(em, raw)
            return
        self.base = elem_addr(em, self.m, row, c0)
        step = self.m.ld if self.m.layout == "col" else 1   # elements per column step
        if isinstance(step, int):
            self.col_step = step * self.bytes
        else:
            self.col_step = em.new("rd")
            em.put(I.binary("mul.wide", "u32", self.col_step, step, self.bytes))

    def load_pair(self, em, j: int, first: str, second: str) -> tuple[str, str] | None:
        """The raw bias of pair j's two columns (predicated on each being in range)."""
        if not self.per_pair:
            return None
        out = []
        for i, pred in enumerate((first, second)):
            steps = 8 * j + i
            if isinstance(self.col_step, int):
                addr = f"{self.base}+{steps * self.col_step}" if steps else self.base
            else:
                addr = self.base
                if steps:
                    addr = em.new("rd")
                    em.put(I.mad("lo", "s64", addr, self.col_step, steps, self.base))
            out.append(self._load(em, pred, addr))
        return out[0], out[1]

    def scaled(self, em, raw: tuple[str, str] | None) -> tuple[str, str]:
        """The beta-scaled f32 bias of a pair's two columns."""
        if raw is None:
            return self.value, self.value
        return self._widen(em, raw[0]), self._widen(em, raw[1])

    def _load(self, em, pred: str | None, addr: str) -> str:
        fmt = self.f.fmt
        kind, ty = ("rs", "b16") if fmt in ("f16", "bf16") else ("f", "f32")
        r = em.new(kind)
        if pred:    # a whole definition first: else ptxas keeps an earlier value alive
            em.put(I.mov(ty, r, "0" if kind == "rs" else "0f00000000"))
        em.put(I.ld(self.m.space, ty, r, I.mem(addr), guard=pred or None))
        return r

    def _widen(self, em, raw: str) -> str:
        """Exactly what load_value does after its load (f16/bf16 to f32), then beta."""
        fmt, ops = self.f.fmt, self.f.ops
        out = raw
        if fmt == "f16":
            out = em.new("f")
            em.put(I.cvt("f32", "f16", out, raw))
        elif fmt == "bf16":
            w, out = em.new("r"), em.new("f")
            em.put(I.cvt("u32", "u16", w, raw), I.binary("shl", "b32", w, w, 16),
                   I.mov("b32", out, w))
        if "beta" in ops:
            b = em.new("f")
            em.put(I.binary("mul.rn", "f32", b, em.reg(ops["beta"]), out))
            out = b
        return out
