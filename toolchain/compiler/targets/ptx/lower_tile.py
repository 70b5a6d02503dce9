"""PTX lowering of the scalar operations tile values lower to (frontend/lower_tile.py).

math.rn -> add/sub/mul/div.rn.f32 (never contracted, so a tile's arithmetic has the same
bits on every profile); math.fma -> fma.rn.f32; math.exp2 -> ex2.approx.ftz.f32, the
instruction tiles.md names as tile_exp2's definition on PTX; tile.uniform marks a tile
operation for the uniformity verifier and emits nothing; tile.mma (frontend/tile_mma.py,
only on profiles with the form) -> one mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.

Register-resident tiles (frontend/tile_frag.py, same profiles): tile.bfly -> shfl.sync.bfly
over the full warp (tile operations are reached by whole workgroups); tile.ldmatrix ->
ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16; tile.cp16 -> cp.async.cg 16 bytes with
a source size (the rest zero-filled); tile.pack -> cvt.rn.{f16x2,bf16x2}.f32, whose halves
are the bits of two cvt.rn of one f32 each.

Their wgmma form (frontend/tile_wgmma.py, sm_90a, docs/internals/tile-wgmma.md):
tile.wgmma -> an A operand from another basic block through an identity shuffle (a ptxas
workaround, _held), the accumulators copied into the registers wgmma updates in place,
wgmma.fence, one wgmma.mma_async m64nNk16 with A from registers (or, for an A tile in
workgroup memory, from a descriptor too) per slab and 16-wide k step (B from a
shared-memory descriptor), wgmma.commit_group, wgmma.wait_group 0, so no
later instruction sees an unfinished accumulator or reuses an A register too early;
tile.proxy_fence -> fence.proxy.async.shared::cta.
"""
from __future__ import annotations

from ...diagnostics import error
from ...ir.module import Const, Instr
from ...ir.types import FloatType
from . import ops, regs
from .instr import Addr, Vec
from .lower_memory import address, cast_space


def _f32(ins: Instr) -> None:
    if ins.type != FloatType(32):
        raise error("E0505", f"{ins.op} on {ins.type} has no PTX lowering (f32 only)",
                    ins.span)


def lower_rn(em, ins: Instr) -> None:
    _f32(ins)
    a, b = (em.reg(v) for v in ins.operands)
    em.put(ops.float_rn(ins.attrs["op"], "f32", em.result(ins), a, b))


def lower_fma(em, ins: Instr) -> None:
    _f32(ins)
    a, b, c = (em.reg(v) for v in ins.operands)
    em.put(ops.fma_rn("f32", em.result(ins), a, b, c))


def lower_exp2(em, ins: Instr) -> None:
    _f32(ins)
    em.put(ops.ex2_approx_ftz(em.result(ins), em.reg(ins.operands[0])))


def lower_uniform(em, ins: Instr) -> None:
    """Checked by ir/uniformity.py before any backend runs; no code."""


def lower_mma(em, ins: Instr) -> None:
    """d = a*b + c of one warp: operands a0..a3, b0, b1 (packed 16-bit pairs), c0..c3."""
    fmt = ins.attrs["format"]
    spelling = f"mma.sync.aligned.m16n8k16.row.col.f32.{fmt}.{fmt}.f32"
    src = []
    for v in ins.operands:
        r = em.reg(v)
        if isinstance(v, Const):            # a fragment register, never an immediate
            r = em.new_t(v.type)
            em.op(ops.MOV[regs.bits(v.type)], r, em.reg(v))
        src.append(r)
    d = Vec([em.new_t(FloatType(32)) for _ in range(4)])
    em.put(ops.mma_sync(spelling, d.regs, src[:4], src[4:6], src[6:]))
    em.define(ins, d)


def lower_bfly(em, ins: Instr) -> None:
    em.put(ops.shfl_bfly(em.result(ins), em.reg(ins.operands[0]), ins.attrs["lanes"]))


def _shared_addr(em, p, offset: int) -> Addr:
    """`[base+offset]` in the shared window for a workgroup (or generic) pointer."""
    if p.type.space == "workgroup":
        a = address(em, p)              # constant ptradds folded
        return Addr(a.base, a.offset + offset)
    return Addr(cast_space(em, em.reg(p), p.type.space, "workgroup"), offset)


def lower_ldmatrix(em, ins: Instr) -> None:
    (p,) = ins.operands
    em.profile.need("ldmatrix", "a register-resident tile matmul", ins.span)
    a = _shared_addr(em, p, int(ins.attrs.get("offset", 0)))
    d = Vec([em.new("r") for _ in range(4)])
    em.put(ops.ldmatrix(d.regs, a, bool(ins.attrs.get("trans"))))
    em.define(ins, d)


def lower_cp16(em, ins: Instr) -> None:
    """16 bytes global -> shared, zero-filled past a source size (operand 3), or (attribute
    zero_if) all zeros where the predicate operand 3 holds: the ignore-src form where the
    target has it, else the source size 0 or 16. A global source's constant offsets fold
    into the address (function._absorbed)."""
    dst, src, last = ins.operands
    em.profile.need("cp.async", "a register-resident tile load", ins.span)
    d = _shared_addr(em, dst, int(ins.attrs.get("offset", 0)))
    if src.type.space == "global":
        s = address(em, src)
    else:
        s = Addr(cast_space(em, em.reg(src), src.type.space, "global"))
    if not ins.attrs.get("zero_if"):
        em.append(ops.cp_async_zfill(d, s, em.val(last)))
    elif em.profile.has("cp.async.ignore-src"):
        em.append(ops.cp_async_ignore_src(d, s, em.reg(last)))
    else:
        n = em.new("r")
        em.put(ops.selp("b32", n, 0, 16, em.reg(last)))
        em.append(ops.cp_async_zfill(d, s, n))


def lower_pack(em, ins: Instr) -> None:
    lo, hi = ins.operands
    em.profile.need("cvt.x2", "a register-resident tile conversion", ins.span)
    em.put(ops.cvt_rn_x2(ins.attrs["format"], em.result(ins), em.reg(hi), em.reg(lo)))


def _fixed(em, v):
    """A register holding v (a constant is moved into one: wgmma operands are registers)."""
    r = em.reg(v)
    if isinstance(v, Const):
        t = em.new_t(v.type)
        em.op(ops.MOV[regs.bits(v.type)], t, r)
        return t
    return r


def _held(em, v, ins: Instr):
    """A register holding A operand v of the wgmma `ins`. One defined outside the wgmma's
    block (Q of attention, loaded before the key loop) is first passed through an identity
    shuffle (`shfl.sync.bfly` 0) into a fresh register: ptxas 13.0 ended the live range of
    a loop-invariant register read only as a wgmma A operand inside the loop and gave it
    to other values (attention with HEAD_DIM = BLOCK_N = 64: S computed from P from the
    second key block on, right at -O0; docs/internals/tile-wgmma.md, "Known wrong"). A
    `mov` does not help (ptxas coalesces it); the shuffle it cannot, so the operand's home
    register is an ordinary loop-carried value. Only loop-invariant operands take it: a
    value of the same iteration defined in an earlier block (P before the branch of
    --gpu-tile-rescale-skip) is an ordinary register to ptxas."""
    if isinstance(v, Instr) and v.block is not ins.block and _invariant_in_loop(em, v, ins):
        t = em.new_t(v.type)
        em.put(ops.shfl_bfly(t, em.reg(v), 0))
        return t
    return _fixed(em, v)


def _invariant_in_loop(em, v: Instr, ins: Instr) -> bool:
    """v is defined outside the innermost loop around `ins` (the loop nest is found once
    per function). A value defined in the same loop iteration (P of attention, converted
    before a branch that ends its block) is an ordinary register to ptxas."""
    info = getattr(em, "_wgmma_loops", None)
    if info is None or info[0] is not em.fn:
        from ...ir.cfg import DomTree, LoopInfo
        info = em._wgmma_loops = (em.fn, LoopInfo(em.fn, DomTree(em.fn)))
    lp = info[1].loop_of.get(ins.block)
    return lp is None or lp.is_invariant(v)


def _descriptors(em, p, offsets, sbo: int, lbo: int, swizzle: int,
                 per_warp: bool = False) -> list:
    """A wgmma descriptor of the shared tile at pointer p for each byte offset (the start
    address moves by whole 16-byte units). `per_warp`: p depends on the thread id but is
    the same in every lane of a warp (a warpgroup's slab of a shared A tile): lane 0's
    address is broadcast (`shfl.sync.idx` 0), which tells ptxas the value is warp-uniform,
    so the descriptors live in uniform registers as B's do, instead of being built in
    ordinary registers and moved over (`R2UR`) before every wgmma (about 6 instructions a
    wgmma: 48 a key block in d128 attention with Q in workgroup memory); CUTLASS reads
    its warpgroup index the same way."""
    from .tensor.wgmma import desc_base     # (the GEMM's modules load only when used)
    a = _shared_addr(em, p, 0)
    smem = em.new("r")
    em.put(ops.cvt("u32", "u64", smem, a.base))
    if a.offset:
        em.put(ops.binary("add", "u32", smem, smem, a.offset))
    if per_warp:
        em.put(ops.shfl_idx(smem, smem, 0))
    base = desc_base(em, smem, sbo=sbo, lbo=lbo, swizzle=swizzle)
    descs = []
    for off in offsets:
        if off == 0:
            descs.append(base)
            continue
        d = em.new("rd")
        em.put(ops.binary("add", "s64", d, base, off >> 4))
        descs.append(d)
    return descs


def lower_wgmma(em, ins: Instr) -> None:
    """Operands: the A words (4 per k step, k steps inner, slabs outer) or, with attrs
    a_steps, the A tile's pointer (this warpgroup's first slab); the B tile's pointer; the
    accumulators (n/2 per slab; none: the first k step of each slab runs with scale-d
    false, d = a*b, and reads no accumulator)."""
    em.profile.need("wgmma", "a register-resident tile matmul on wgmma", ins.span)
    at = ins.attrs
    n, steps, slabs, fmt = at["n"], at["steps"], at["slabs"], at["format"]
    shared_a = "a_steps" in at
    na = 1 if shared_a else 4 * len(steps) * slabs
    a_vals, p, c_vals = ins.operands[:na], ins.operands[na], ins.operands[na + 1:]
    descs = _descriptors(em, p, steps, at["sbo"], at["lbo"], at["swizzle"])
    if shared_a:                # slab s, k step ks: a_slab s + a_steps[ks] bytes in
        a_descs = _descriptors(em, a_vals[0], [at["a_slab"] * s + off for s in range(slabs)
                                               for off in at["a_steps"]],
                               at["a_sbo"], at["a_lbo"], at["a_swizzle"], per_warp=True)
    else:
        a_regs = [_held(em, v, ins) for v in a_vals]
    # wgmma reads and writes its accumulators in place: fresh registers holding c
    acc = [em.new_t(FloatType(32)) for _ in range(slabs * n // 2)]
    for r, v in zip(acc, c_vals):
        em.op(ops.MOV["f32"], r, em.reg(v))
    one = em.new("p")
    em.put(ops.setp("eq", "u32", one, 0, 0))
    first = one
    if not c_vals:
        first = em.new("p")
        em.put(ops.setp("ne", "u32", first, 0, 0))
    em.put(ops.wgmma_fence())       # after the ordinary writes of A and the accumulators
    half, nk = n // 2, len(steps)
    for s in range(slabs):
        for ks in range(nk):
            d, scale = acc[half * s:half * (s + 1)], first if ks == 0 else one
            if shared_a:
                em.put(ops.wgmma_mma_async(n, "f32", fmt, fmt, d, a_descs[s * nk + ks],
                                           descs[ks], scale, trans_b=at["trans"]))
                continue
            w = 4 * (s * nk + ks)
            em.put(ops.wgmma_mma_async_rs(n, "f32", fmt, fmt, d, a_regs[w:w + 4], descs[ks],
                                          scale, at["trans"]))
    em.put(ops.wgmma_commit_group(), ops.wgmma_wait_group(0))
    em.define(ins, Vec(acc))


def lower_need_shared(em, ins: Instr) -> None:
    """Trap unless %dynamic_smem_size >= attrs.bytes: tiles in the dynamic arena must not
    run past a smaller launch's memory (the runtime passes the size from the signature)."""
    have, short = em.new("r"), em.new("p")
    em.op("mov.u32", have, "%dynamic_smem_size")
    em.put(ops.setp("lt", "u32", short, have, int(ins.attrs["bytes"])))
    em.effect("trap", guard=short)


def lower_proxy_fence(em, ins: Instr) -> None:
    em.profile.need("wgmma", "a register-resident tile matmul on wgmma", ins.span)
    em.put(ops.fence_proxy_async_shared())


LOWER = {"tile.mma": lower_mma, "tile.bfly": lower_bfly, "tile.ldmatrix": lower_ldmatrix,
         "tile.cp16": lower_cp16, "tile.pack": lower_pack, "math.rn": lower_rn,
         "math.fma": lower_fma, "math.exp2": lower_exp2, "tile.uniform": lower_uniform,
         "tile.wgmma": lower_wgmma, "tile.proxy_fence": lower_proxy_fence,
         "tile.need_shared": lower_need_shared}
