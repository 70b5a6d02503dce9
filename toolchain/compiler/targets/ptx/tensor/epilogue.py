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

Fused (attrs["fused"] = the optimizer's residency group, placed just before its commit):
when the group is resident the same arithmetic (`_apply`) runs on every accumulator
register before the commit's one store. Bias-free epilogues need no coordinates, so both
register families take them; a bias needs each register's logical (row, col), which only
the direct m16n8 families have (mma_sync.acc_offsets: row = groupID / groupID+8, col =
2*threadID_in_group + {0, 1} per n8 block), so every bias mode is read through that mapping
there, while a resident stable-WMMA group (opaque fragments) stores D first and the
complete memory operation follows. A replayed group leaves D in memory: memory operation.
"""
from __future__ import annotations

from ....ir import tensor as T
from .. import ops as I
from ..lower_memory import SPACE
from .common import Mat, add_addr, elem_addr, label, live_lanes, operands
from .mma_sync import acc_offsets
from .replay import load_value
from .resident import Group, group_state, remark, store_now


def _mat(em, v, layout: str, ld, default_ld: int, fmt: str, ops: dict, role: str) -> Mat:
    if ld is None:
        ld = em.reg(ops[role]) if role in ops else default_ld
    return Mat(em.reg(v), SPACE[v.type.space], layout, ld, T.packed_bits(fmt))


def _distribution(em, scope: str) -> tuple[str, str, str | None]:
    """(rank, count, warp mask or None) and the entry ordering barrier."""
    if scope == "subgroup":
        mask, rank, count = live_lanes(em)
        em.put(I.bar_warp_sync(mask))
        return rank, count, mask
    em.put(I.bar_sync(0))
    r = {k: em.new("r") for k in ("tx", "ty", "tz", "nx", "ny", "nz", "rank", "count")}
    for k, sreg in (("tx", "%tid.x"), ("ty", "%tid.y"), ("tz", "%tid.z"),
                    ("nx", "%ntid.x"), ("ny", "%ntid.y"), ("nz", "%ntid.z")):
        em.put(I.mov("u32", r[k], sreg))
    em.put(I.mad("lo", "u32", r["rank"], r["tz"], r["ny"], r["ty"]),
           I.mad("lo", "u32", r["rank"], r["rank"], r["nx"], r["tx"]),
           I.binary("mul.lo", "u32", r["count"], r["nx"], r["ny"]),
           I.binary("mul.lo", "u32", r["count"], r["count"], r["nz"]))
    return r["rank"], r["count"], None


def _store(em, fmt: str, m: Mat, addr: str, v: str) -> None:
    if fmt in ("f16", "bf16"):
        h = em.new("rs")
        em.put(I.cvt(fmt, "f32", h, v, rounding="rn"), I.st(m.space, "b16", I.mem(addr), h))
    else:
        em.put(I.st(m.space, fmt, I.mem(addr), v))


def _bias_view(em, desc, ops, fmt: str) -> Mat:
    """The bias as a logical m x n matrix: a row (column) vector is a matrix whose column
    (row) stride is zero, so every bias mode has one addressing rule."""
    v = ops["bias"]
    if desc.bias_mode == "row":
        return Mat(em.reg(v), SPACE[v.type.space], "col", 0, T.packed_bits(fmt))
    if desc.bias_mode == "column":
        return Mat(em.reg(v), SPACE[v.type.space], "row", 0, T.packed_bits(fmt))
    bdef = desc.n if desc.bias_layout == "row" else desc.m
    return _mat(em, v, desc.bias_layout, desc.ldbias, bdef, fmt, ops, "ldbias")


def _scaled_bias(em, desc, ops, bias: Mat, addr: str, ty: str) -> str:
    """beta*bias[addr] (beta*bias rounded first, as the memory path does)."""
    b = load_value(em, desc.element_type, bias, addr)
    if "beta" in ops:
        em.put(I.binary("mul.rn", ty, b, em.reg(ops["beta"]), b))
    return b


def _apply(em, desc, ops, t: str, ty: str, bias=None) -> None:
    """t = act(alpha*t + bias()) in place; `bias` returns the beta-scaled bias register."""
    if "alpha" in ops:
        em.put(I.binary("mul.rn", ty, t, em.reg(ops["alpha"]), t))
    if bias is not None:
        em.put(I.binary("add.rn", ty, t, t, bias()))
    p = em.new("p")
    zero = "0d0000000000000000" if ty == "f64" else "0f00000000"
    if desc.activation == "relu":
        em.put(I.setp("lt", ty, p, t, zero), I.selp(ty, t, zero, t, p))
    elif desc.activation == "clamp":
        lo, hi = em.reg(ops["clamp_min"]), em.reg(ops["clamp_max"])
        em.put(I.setp("lt", ty, p, t, lo), I.selp(ty, t, lo, t, p),
               I.setp("gt", ty, p, t, hi), I.selp(ty, t, hi, t, p))


def _element(em, desc, ops, D: Mat, bias: Mat | None, r: str, c: str) -> None:
    fmt = desc.element_type
    ty = "f64" if fmt == "f64" else "f32"
    addr = elem_addr(em, D, r, c)
    t = load_value(em, fmt, D, addr)
    _apply(em, desc, ops, t, ty, None if bias is None else
           lambda: _scaled_bias(em, desc, ops, bias, elem_addr(em, bias, r, c), ty))
    _store(em, fmt, D, addr, t)


def _on_registers(em, ins, group, state: Group | None) -> bool:
    """The fused epilogue of `group` (module docstring); False: the caller runs the complete
    memory operation (after D was stored, when the group is resident)."""
    desc, ops = ins.attrs["desc"], operands(ins)
    mode = desc.bias_mode
    if state is None:
        why = "the group replays, D is in memory"
    elif mode != "none" and state.family == "wmma":
        why = "a bias needs fragment coordinates and stable WMMA's are opaque; D stored first"
        default = desc.n if desc.layout == "row" else desc.m
        store_now(em, state, _mat(em, ops["d"], desc.layout, desc.ld, default,
                                  desc.element_type, ops, "ldd"))
    else:
        why = None
    if why is not None:
        em.put(I.comment(f"mtlc.tensor_epilogue memory group={group}: {why}".strip()))
        remark(em, ins, f"tensor epilogue on group {group}: complete memory operation ({why})")
        return False
    how = f"{state.family} registers" + (f", {mode} bias" if mode != "none" else "")
    em.put(I.comment(f"mtlc.tensor_epilogue fused on resident group={group} ({how})"))
    regs, load = state.registers(), None
    if mode != "none":
        bias, cache = _bias_view(em, desc, ops, desc.element_type), {}
        base, offs = acc_offsets(em, state.acc.lane, bias, state.acc.grid)
        flat = [o for row in offs for sub in row for o in sub]

        def load(k):                    # one load (and beta product) per distinct element
            if flat[k] not in cache:
                cache[flat[k]] = _scaled_bias(em, desc, ops, bias,
                                              add_addr(em, base, flat[k]), "f32")
            return cache[flat[k]]
    for k, r in enumerate(regs):
        _apply(em, desc, ops, r, "f32", None if load is None else (lambda k=k: load(k)))
    text = f"tensor epilogue applied to group {group}'s registers before its store"
    if mode != "none":
        text += (f" ({mode} bias read through the m16n8 accumulator mapping: row = groupID "
                 "or groupID+8, column = 2*threadID_in_group + 0/1 per n8 block)")
    remark(em, ins, text)
    return True


def lower_epilogue(em, ins) -> None:
    group = ins.attrs.get("fused")
    if group is not None and _on_registers(em, ins, group, group_state(em, group)):
        return
    desc, ops = ins.attrs["desc"], operands(ins)
    fmt = desc.element_type
    if fmt == "bf16":
        em.profile.need("cvt.bf16", "bf16 tensor_epilogue (cvt.rn.bf16.f32)", ins.span)
    default = desc.n if desc.layout == "row" else desc.m
    D = _mat(em, ops["d"], desc.layout, desc.ld, default, fmt, ops, "ldd")
    bias = _bias_view(em, desc, ops, fmt) if "bias" in ops else None
    rank, count, mask = _distribution(em, desc.scope)
    e, p = em.new("r"), em.new("p")
    em.put(I.mov("u32", e, rank))
    top, end = label(em, "tep_e"), label(em, "tep_end")
    em.put(I.label(top), I.setp("ge", "u32", p, e, desc.m * desc.n), I.bra(end, guard=p))
    r, c = em.new("r"), em.new("r")
    em.put(I.binary("div", "u32", r, e, desc.n), I.binary("rem", "u32", c, e, desc.n))
    _element(em, desc, ops, D, bias, r, c)
    em.put(I.binary("add", "u32", e, e, count), I.bra(top), I.label(end),
           I.bar_warp_sync(mask) if mask is not None else I.bar_sync(0))
