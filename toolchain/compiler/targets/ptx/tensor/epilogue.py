"""tensor.epilogue on PTX: D[r,c] = act(alpha*D[r,c] + beta*bias[r,c]) as an entry-ordered,
exit-ordered cooperative logical-memory operation (gpu.md "Post-processing").

Work distribution: subgroup scope deals the m*n elements to the live lanes by rank
(`bar.warp.sync` on the live mask before and after); workgroup scope deals them to every
work-item by linear id (`bar.sync 0` before and after). Arithmetic, in this exact order so
a CPU oracle reproduces it bit for bit: f16/bf16/f32 storage computes in f32, f64 in f64;
t = D; t = alpha*t (only when alpha is given: an omitted scale is one, and multiplying by
one would canonicalise NaN payloads); t = t + beta*bias (beta*bias rounded first; only
when a bias exists, so -0 survives a bias-free epilogue); ReLU: ordered t < 0 becomes +0
(-0 and NaN survive); clamp: ordered t < lo becomes lo, then ordered t > hi becomes hi.
Results round to nearest-even into f16/bf16 storage.
"""
from __future__ import annotations

from ....ir import tensor as T
from ..lower_memory import SPACE
from .common import Mat, elem_addr, label, live_lanes, operands
from .replay import load_value
from .resident import lower_fused_epilogue


def _mat(em, v, layout: str, ld, default_ld: int, fmt: str, ops: dict, role: str) -> Mat:
    if ld is None:
        ld = em.reg(ops[role]) if role in ops else default_ld
    return Mat(em.reg(v), SPACE[v.type.space], layout, ld, T.packed_bits(fmt))


def _distribution(em, scope: str) -> tuple[str, str, str | None]:
    """(rank, count, warp mask or None) and the entry ordering barrier."""
    if scope == "subgroup":
        mask, rank, count = live_lanes(em)
        em.emit(f"bar.warp.sync {mask}")
        return rank, count, mask
    em.emit("bar.sync 0")
    r = {k: em.new("r") for k in ("tx", "ty", "tz", "nx", "ny", "nz", "rank", "count")}
    for k, sreg in (("tx", "%tid.x"), ("ty", "%tid.y"), ("tz", "%tid.z"),
                    ("nx", "%ntid.x"), ("ny", "%ntid.y"), ("nz", "%ntid.z")):
        em.emit(f"mov.u32 {r[k]}, {sreg}")
    em.emit(f"mad.lo.u32 {r['rank']}, {r['tz']}, {r['ny']}, {r['ty']}")
    em.emit(f"mad.lo.u32 {r['rank']}, {r['rank']}, {r['nx']}, {r['tx']}")
    em.emit(f"mul.lo.u32 {r['count']}, {r['nx']}, {r['ny']}")
    em.emit(f"mul.lo.u32 {r['count']}, {r['count']}, {r['nz']}")
    return r["rank"], r["count"], None


def _store(em, fmt: str, m: Mat, addr: str, v: str) -> None:
    if fmt in ("f16", "bf16"):
        h = em.new("rs")
        em.emit(f"cvt.rn.{fmt}.f32 {h}, {v}")
        em.emit(f"st{m.space}.b16 [{addr}], {h}")
    else:
        em.emit(f"st{m.space}.{fmt} [{addr}], {v}")


def _bias(em, desc, bias: Mat, r: str, c: str, fmt: str) -> str:
    if desc.bias_mode == "row":
        addr = elem_addr(em, Mat(bias.base, bias.space, "col", 1, bias.bits), r, 0)
    elif desc.bias_mode == "column":
        addr = elem_addr(em, Mat(bias.base, bias.space, "row", 1, bias.bits), 0, c)
    else:
        addr = elem_addr(em, bias, r, c)
    return load_value(em, fmt, bias, addr)


def _element(em, desc, ops, D: Mat, bias: Mat | None, r: str, c: str) -> None:
    fmt = desc.element_type
    ty = "f64" if fmt == "f64" else "f32"
    addr = elem_addr(em, D, r, c)
    t = load_value(em, fmt, D, addr)
    if "alpha" in ops:
        em.emit(f"mul.rn.{ty} {t}, {em.reg(ops['alpha'])}, {t}")
    if bias is not None:
        b = _bias(em, desc, bias, r, c, fmt)
        if "beta" in ops:
            em.emit(f"mul.rn.{ty} {b}, {em.reg(ops['beta'])}, {b}")
        em.emit(f"add.rn.{ty} {t}, {t}, {b}")
    p = em.new("p")
    zero = "0d0000000000000000" if ty == "f64" else "0f00000000"
    if desc.activation == "relu":
        em.emit(f"setp.lt.{ty} {p}, {t}, {zero}")
        em.emit(f"selp.{ty} {t}, {zero}, {t}, {p}")
    elif desc.activation == "clamp":
        lo, hi = em.reg(ops["clamp_min"]), em.reg(ops["clamp_max"])
        em.emit(f"setp.lt.{ty} {p}, {t}, {lo}")
        em.emit(f"selp.{ty} {t}, {lo}, {t}, {p}")
        em.emit(f"setp.gt.{ty} {p}, {t}, {hi}")
        em.emit(f"selp.{ty} {t}, {hi}, {t}, {p}")
    _store(em, fmt, D, addr, t)


def lower_epilogue(em, ins) -> None:
    if lower_fused_epilogue(em, ins):          # on a resident accumulator (resident.py)
        return
    desc, ops = ins.attrs["desc"], operands(ins)
    fmt = desc.element_type
    if fmt == "bf16":
        em.profile.require("bf16 tensor_epilogue (cvt.rn.bf16.f32)", (7, 0), 80, ins.span)
    default = desc.n if desc.layout == "row" else desc.m
    D = _mat(em, ops["d"], desc.layout, desc.ld, default, fmt, ops, "ldd")
    bias = None
    if "bias" in ops:
        bdef = desc.n if desc.bias_layout == "row" else desc.m
        bias = _mat(em, ops["bias"], desc.bias_layout, desc.ldbias, bdef, fmt, ops, "ldbias")
    rank, count, mask = _distribution(em, desc.scope)
    e, p = em.new("r"), em.new("p")
    em.emit(f"mov.u32 {e}, {rank}")
    top, end = label(em, "tep_e"), label(em, "tep_end")
    em.raw(f"{top}:")
    em.emit(f"setp.ge.u32 {p}, {e}, {desc.m * desc.n}")
    em.emit(f"@{p} bra {end}")
    r, c = em.new("r"), em.new("r")
    em.emit(f"div.u32 {r}, {e}, {desc.n}")
    em.emit(f"rem.u32 {c}, {e}, {desc.n}")
    _element(em, desc, ops, D, bias, r, c)
    em.emit(f"add.u32 {e}, {e}, {count}")
    em.emit(f"bra {top}")
    em.raw(f"{end}:")
    em.emit(f"bar.warp.sync {mask}" if mask is not None else "bar.sync 0")
