"""IR kernels built with the public builder (no frontend) for the SPIR-V emitter tests.

Each `*_module()` returns a fresh ir.Module whose kernels are described in its docstring;
the execution tests compute the same results with numpy oracles.
"""
from __future__ import annotations

import struct

from toolchain.compiler.ir import (BOOL, F32, I32, I64, U16, U32, VOID, Builder, Module,
                                   ptr)

G = "global"


def _kernel(b: Builder, name: str, params, block_shape=None):
    fn = b.function(name, params, VOID, kind="kernel", block_shape=block_shape)
    b.position_at_end(b.append_block(fn, "entry"))
    return fn


def global_id(b: Builder, axis: str = "x"):
    """block.axis * block_dim.axis + thread.axis, as i32."""
    blk = b.mul(b.gpu_index("block", axis), b.gpu_index("block_dim", axis))
    return b.convert(b.add(blk, b.gpu_index("thread", axis)), I32)


def guarded(b: Builder, fn, cond, body) -> None:
    """if (cond) body(); then return."""
    then, done = b.append_block(fn, "then"), b.append_block(fn, "done")
    b.cbr(cond, then, done)
    b.position_at_end(then)
    body()
    b.br(done)
    b.position_at_end(done)
    b.ret()


def at(b: Builder, p, i):
    return b.ptradd(p, b.convert(i, I64))


def vadd_module() -> Module:
    """vadd(a, b, c, n): c[i] = a[i] + b[i] for i < n."""
    b = Builder(Module("vadd"))
    fn = _kernel(b, "vadd", [("a", ptr(F32, G)), ("b", ptr(F32, G)), ("c", ptr(F32, G)),
                             ("n", I32)])
    pa, pb, pc, n = fn.params
    i = global_id(b)
    guarded(b, fn, b.cmp("lt", i, n), lambda: b.store(
        at(b, pc, i), b.add(b.load(at(b, pa, i)), b.load(at(b, pb, i)))))
    return b.module


def saxpy_module() -> Module:
    """saxpy(a, x, y, n): y[i] = axpy(a, x[i], y[i]) through a helper; plus an unused
    host function that must not be emitted."""
    b = Builder(Module("saxpy"))
    helper = b.function("axpy", [("a", F32), ("x", F32), ("y", F32)], F32)
    b.position_at_end(b.append_block(helper, "entry"))
    a, x, y = helper.params
    b.ret(b.add(b.mul(a, x), y))
    host = b.function("host_only", [("v", I32)], I32)
    b.position_at_end(b.append_block(host, "entry"))
    b.ret(b.add(host.params[0], b.const(I32, 1)))
    fn = _kernel(b, "saxpy", [("a", F32), ("x", ptr(F32, G)), ("y", ptr(F32, G)),
                              ("n", I32)])
    a, px, py, n = fn.params
    i = global_id(b)
    guarded(b, fn, b.cmp("lt", i, n), lambda: b.store(
        at(b, py, i), b.call(helper, [a, b.load(at(b, px, i)), b.load(at(b, py, i))])))
    return b.module


def index3d_module() -> Module:
    """index3d(out, nx, ny, nz): out[(z*ny+y)*nx+x] = that index, in range only; uses a
    bool local for the combined guard (bool locals live in memory as uchar)."""
    b = Builder(Module("index3d"))
    fn = _kernel(b, "index3d", [("out", ptr(I32, G)), ("nx", I32), ("ny", I32),
                                ("nz", I32)])
    out, nx, ny, nz = fn.params
    x, y, z = (global_id(b, ax) for ax in "xyz")
    ok = b.local(fn, BOOL, "ok")
    inside = b.binop("and", b.cmp("lt", x, nx), b.cmp("lt", y, ny))
    b.local_set(ok, b.binop("and", inside, b.cmp("lt", z, nz)))
    idx = b.add(b.mul(b.add(b.mul(z, ny), y), nx), x)
    guarded(b, fn, b.local_get(ok), lambda: b.store(at(b, out, idx), idx))
    return b.module


def math_module() -> Module:
    """math(x, out, n): out[i] = sqrt|x| + exp(x/2)*sin x + cos x - log(|x|+1) + rsqrt|x|."""
    b = Builder(Module("math"))
    fn = _kernel(b, "math", [("x", ptr(F32, G)), ("out", ptr(F32, G)), ("n", I32)])
    px, pout, n = fn.params
    i = global_id(b)

    def body():
        v = b.load(at(b, px, i))
        m = lambda op, a: b.intrinsic(f"math.{op}", F32, [a])  # noqa: E731
        a = m("fabs", v)
        s = b.add(m("sqrt", a), b.mul(m("exp", b.mul(v, b.const(F32, 0.5))), m("sin", v)))
        s = b.sub(b.add(s, m("cos", v)), m("log", b.add(a, b.const(F32, 1.0))))
        b.store(at(b, pout, i), b.add(s, m("rsqrt", a)))
    guarded(b, fn, b.cmp("lt", i, n), body)
    return b.module


def staged_module() -> Module:
    """staged(x, out, n) with block (64,1,1): a static workgroup tile and a private
    scratch array; out[i] = tile[63 - l] * 2 + scratch[l % 4] where scratch[j] = j, after
    a (workgroup, global, acq_rel) barrier; every item of the group stores its tile slot."""
    b = Builder(Module("staged"))
    fn = _kernel(b, "staged", [("x", ptr(F32, G)), ("out", ptr(F32, G)), ("n", I32)],
                 block_shape=(64, 1, 1))
    px, pout, n = fn.params
    tile = b.gpu_alloc("workgroup", F32, 64, "tile")
    scratch = b.gpu_alloc("private", I32, 4, "scratch")
    for j in range(4):
        b.store(b.ptradd(scratch, b.const(I64, j)), b.const(I32, j))
    lane = b.convert(b.gpu_index("thread", "x"), I32)
    i = global_id(b)
    b.store(at(b, tile, lane), b.load(at(b, px, i)))
    b.barrier(("workgroup", "global"), "acq_rel")
    mirrored = b.load(at(b, tile, b.sub(b.const(I32, 63), lane)))
    extra = b.load(at(b, scratch, b.rem(lane, b.const(I32, 4))))
    val = b.add(b.mul(mirrored, b.const(F32, 2.0)), b.convert(extra, F32))
    guarded(b, fn, b.cmp("lt", i, n), lambda: b.store(at(b, pout, i), val))
    return b.module


def dynamic_module() -> Module:
    """dynamic(x, out, flags) + hidden arena: two views of the launch-sized workgroup
    arena (f32 values at [l], u32 tags at [L + l]); out[i] = values[L-1-l] + tags[L+l]
    after a barrier, flags[i] = tags[L + (L-1-l)]. L = block_dim.x."""
    b = Builder(Module("dynamic"))
    fn = _kernel(b, "dynamic", [("x", ptr(F32, G)), ("out", ptr(F32, G)),
                                ("flags", ptr(U32, G))])
    px, pout, pflags = fn.params
    values = b.dynamic_shared(F32, "values")
    tags = b.dynamic_shared(U32, "tags")
    lane = b.convert(b.gpu_index("thread", "x"), I32)
    size = b.convert(b.gpu_index("block_dim", "x"), I32)
    i = global_id(b)
    b.store(at(b, values, lane), b.load(at(b, px, i)))
    b.store(at(b, tags, b.add(size, lane)), b.convert(b.mul(i, b.const(I32, 3)), U32))
    b.barrier(("workgroup",), "acq_rel")
    mirror = b.sub(b.sub(size, b.const(I32, 1)), lane)
    tag = b.load(at(b, tags, b.add(size, lane)))
    b.store(at(b, pout, i), b.add(b.load(at(b, values, mirror)), b.convert(tag, F32)))
    b.store(at(b, pflags, i), b.load(at(b, tags, b.add(size, mirror))))
    b.ret()
    return b.module


def async_module(count_const: bool = True) -> Module:
    """stage(src, out, k) block (32,1,1): each item async-copies 4 u32 (one 16-byte
    transaction) from src[4g..] into tile[4l..], commits, waits, barriers, then writes
    out[4g + j] = tile[(4(l+1) + j) % 128] (its neighbour's data). With count_const False
    the element count is the runtime argument k (a copy loop)."""
    b = Builder(Module("stage"))
    fn = _kernel(b, "stage", [("src", ptr(U32, G)), ("out", ptr(U32, G)), ("k", I32)],
                 block_shape=(32, 1, 1))
    src, out, k = fn.params
    tile = b.gpu_alloc("workgroup", U32, 128, "tile")
    lane = b.convert(b.gpu_index("thread", "x"), I32)
    g = global_id(b)
    four = b.const(I32, 4)
    count = b.const(I32, 4) if count_const else k
    b.async_copy(at(b, tile, b.mul(lane, four)), at(b, src, b.mul(g, four)), count, 16,
                 "global")
    b.async_commit()
    b.async_wait(0)
    b.barrier(("workgroup",), "acq_rel")
    nb = b.mul(b.add(lane, b.const(I32, 1)), four)
    for j in range(4):
        jj = b.const(I32, j)
        v = b.load(at(b, tile, b.rem(b.add(nb, jj), b.const(I32, 128))))
        b.store(at(b, out, b.add(b.mul(g, four), jj)), v)
    b.ret()
    return b.module


def atomics_module(elem=U32) -> Module:
    """atomics(counters, slots, out) with a workgroup counter too: every item does
    add 1 / sub 2 / max i / min i / or bit / xor bit / and / exchange / cmpxchg on global
    counters (varied scopes and orders), a workgroup add, then atomic load+store
    publication. Element type u32 or u64."""
    b = Builder(Module("atomics"))
    fn = _kernel(b, "atomics", [("c", ptr(elem, G)), ("out", ptr(elem, G))],
                 block_shape=(64, 1, 1))
    c, out = fn.params
    i = global_id(b)
    iv = b.convert(i, elem)
    one = b.const(elem, 1)
    cell = lambda k: b.ptradd(c, b.const(I64, k))  # noqa: E731
    b.atomic_rmw("add", cell(0), one, "relaxed", "device")
    b.atomic_rmw("sub", cell(1), b.const(elem, 2), "acq_rel", "system")
    b.atomic_rmw("max", cell(2), iv, "release", "device")
    b.atomic_rmw("min", cell(3), iv, "acquire", "device")
    bit = b.binop("shl", one, b.binop("and", iv, b.const(elem, 31)))
    b.atomic_rmw("or", cell(4), bit, "seq_cst", "device")
    b.atomic_rmw("xor", cell(5), bit, "seq_cst", "device")
    b.atomic_rmw("and", cell(6), b.unop("not", bit), "seq_cst", "workgroup")
    old = b.atomic_rmw("exchange", cell(7), iv, "seq_cst", "device")
    b.store(b.ptradd(out, b.convert(i, I64)), old)
    # cmpxchg increment loop on cell 8 (every item adds 3 exactly once)
    loop, done = b.append_block(fn, "cas"), b.append_block(fn, "cas.done")
    b.br(loop)
    b.position_at_end(loop)
    seen = b.atomic_load(cell(8), "acquire", "device")
    got = b.atomic_cmpxchg(cell(8), seen, b.add(seen, b.const(elem, 3)), "acq_rel",
                           "acquire", "device")
    b.cbr(b.cmp("eq", got, seen), done, loop)
    b.position_at_end(done)
    wg = b.gpu_alloc("workgroup", elem, 1, "wgcount")
    lane = b.gpu_index("thread", "x")
    first = b.cmp("eq", lane, b.const(U32, 0))
    init, after = b.append_block(fn, "init"), b.append_block(fn, "after")
    b.cbr(first, init, after)
    b.position_at_end(init)
    b.atomic_store(wg, b.const(elem, 0), "relaxed", "workgroup")
    b.br(after)
    b.position_at_end(after)
    b.barrier(("workgroup",), "seq_cst")
    b.atomic_rmw("add", wg, one, "relaxed", "work_item" if elem == U32 else "workgroup")
    b.barrier(("workgroup",), "seq_cst")
    total = b.atomic_load(wg, "seq_cst", "subgroup")
    b.atomic_store(cell(9), total, "release", "device")
    b.ret()
    return b.module


def subgroup_module() -> Module:
    """subgroups(x, out) block (64,1,1): per item 9 outputs at out[9i..]: local id, size,
    broadcast from lane 1, reduce add/min/max (u32), inclusive/exclusive scan (u32),
    ballot word 0 of (x odd), any(x > 1000) | all(x > 0) << 1, shuffle from const lane 2."""
    b = Builder(Module("subgroups"))
    fn = _kernel(b, "subgroups", [("x", ptr(U32, G)), ("out", ptr(U32, G))],
                 block_shape=(64, 1, 1))
    px, pout = fn.params
    i = global_id(b)
    v = b.load(at(b, px, i))
    lane2 = b.const(U32, 2)
    res = [b.subgroup("local_id", U32), b.subgroup("size", U32),
           b.subgroup("broadcast", U32, [v, b.const(U32, 1)]),
           b.subgroup("reduce", U32, [v], {"op": "add"}),
           b.subgroup("reduce", U32, [v], {"op": "min"}),
           b.subgroup("reduce", U32, [v], {"op": "max"}),
           b.subgroup("scan", U32, [v], {"op": "add", "inclusive": True}),
           b.subgroup("scan", U32, [v], {"op": "add", "inclusive": False})]
    odd = b.cmp("ne", b.binop("and", v, b.const(U32, 1)), b.const(U32, 0))
    res.append(b.subgroup("ballot", U32, [odd, b.const(U32, 0)]))
    anyv = b.subgroup("any", BOOL, [b.cmp("gt", v, b.const(U32, 1000))])
    allv = b.subgroup("all", BOOL, [b.cmp("gt", v, b.const(U32, 0))])
    votes = b.binop("or", b.convert(anyv, U32),
                    b.binop("shl", b.convert(allv, U32), b.const(U32, 1)))
    res.append(votes)
    res.append(b.subgroup("shuffle", U32, [v, lane2]))
    base = b.mul(i, b.const(I32, len(res)))
    for k, r in enumerate(res):
        b.store(at(b, pout, b.add(base, b.const(I32, k))), r)
    b.ret()
    return b.module


SUBGROUP_OUTPUTS = 11


def float_subgroup_module() -> Module:
    """fsub(x, out): out[3i..] = reduce add, reduce max, inclusive scan of f32 x."""
    b = Builder(Module("fsub"))
    fn = _kernel(b, "fsub", [("x", ptr(F32, G)), ("out", ptr(F32, G))])
    px, pout = fn.params
    i = global_id(b)
    v = b.load(at(b, px, i))
    res = [b.subgroup("reduce", F32, [v], {"op": "add"}),
           b.subgroup("reduce", F32, [v], {"op": "max"}),
           b.subgroup("scan", F32, [v], {"op": "add", "inclusive": True})]
    for k, r in enumerate(res):
        b.store(at(b, pout, b.add(b.mul(i, b.const(I32, 3)), b.const(I32, k))), r)
    b.ret()
    return b.module


def intrinsics_module() -> Module:
    """ints(a, b, c, f, out_u, out_f): per item i, from a=a[i], b=b[i], c=c[i], f=f[i]:
    out_u[12i..] = dp4a u/s, dp2a lo u/s, dp2a hi s, prmt(a, b, c & 0xFFFF), f2h(f),
    f2bf(f), half2.add/mul/fma(a, b, c), half2.pack(f, -f);
    out_f[4i..] = h2f(a & 0xFFFF), bf2f(a >> 16), half2.lo(b), half2.hi(b)."""
    b = Builder(Module("ints"))
    fn = _kernel(b, "ints", [("a", ptr(U32, G)), ("b", ptr(U32, G)), ("c", ptr(U32, G)),
                             ("f", ptr(F32, G)), ("ou", ptr(U32, G)), ("of", ptr(F32, G))])
    pa, pb, pc, pf, ou, of = fn.params
    i = global_id(b)
    a, bb, c, f = (b.load(at(b, p, i)) for p in (pa, pb, pc, pf))
    ci = b.bitcast(c, I32)
    k = b.intrinsic
    us = [k("int.dp4a", U32, [a, bb, c], {"signed": False}),
          b.bitcast(k("int.dp4a", I32, [b.bitcast(a, I32), b.bitcast(bb, I32), ci],
                      {"signed": True}), U32),
          k("int.dp2a", U32, [a, bb, c], {"signed": False, "hi": False}),
          b.bitcast(k("int.dp2a", I32, [b.bitcast(a, I32), b.bitcast(bb, I32), ci],
                      {"signed": True, "hi": False}), U32),
          b.bitcast(k("int.dp2a", I32, [b.bitcast(a, I32), b.bitcast(bb, I32), ci],
                      {"signed": True, "hi": True}), U32),
          k("int.prmt", U32, [a, bb, b.binop("and", c, b.const(U32, 0xFFFF))]),
          b.convert(k("cvt.f2h", U16, [f]), U32),
          b.convert(k("cvt.f2bf", U16, [f]), U32),
          k("half2.add", U32, [a, bb]), k("half2.mul", U32, [a, bb]),
          k("half2.fma", U32, [a, bb, c]),
          k("half2.pack", U32, [f, b.unop("neg", f)])]
    lo16 = b.convert(b.binop("and", a, b.const(U32, 0xFFFF)), U16)
    hi16 = b.convert(b.binop("shr", a, b.const(U32, 16)), U16)
    fs = [k("cvt.h2f", F32, [lo16]), k("cvt.bf2f", F32, [hi16]),
          k("half2.lo", F32, [bb]), k("half2.hi", F32, [bb])]
    for base, outs, p in ((12, us, ou), (4, fs, of)):
        for j, r in enumerate(outs):
            b.store(at(b, p, b.add(b.mul(i, b.const(I32, base)), b.const(I32, j))), r)
    b.ret()
    return b.module


def vec4_module() -> Module:
    """vec4(src, dst) block (16,1,1): private buffer via load4 from src[4g], reversed
    store4 to dst[4g] (dst[4g+j] = src[4g+3-j] + 1)."""
    b = Builder(Module("vec4"))
    fn = _kernel(b, "vec4", [("src", ptr(F32, G)), ("dst", ptr(F32, G))],
                 block_shape=(16, 1, 1))
    src, dst = fn.params
    g = b.mul(global_id(b), b.const(I32, 4))
    tmp = b.gpu_alloc("private", F32, 4, "tmp")
    rev = b.gpu_alloc("private", F32, 4, "rev")
    b.intrinsic("vec.load4", VOID, [at(b, src, g), tmp])
    for j in range(4):
        v = b.load(b.ptradd(tmp, b.const(I64, 3 - j)))
        b.store(b.ptradd(rev, b.const(I64, j)), b.add(v, b.const(F32, 1.0)))
    b.intrinsic("vec.store4", VOID, [at(b, dst, g), rev])
    b.ret()
    return b.module


ARITH_OUTPUTS = 20


def arith_module() -> Module:
    """arith(a: i32*, b: i32*, f: f32*, out: i64*): per item, with a, b (b != 0) and f,
    out[20i..] = a/b, a%b, (u32)a/(u32)b, (u32)a%(u32)b, a>>3, (u32)a>>3, a<<5, min, max,
    umin, umax, (i8)a, (u16)a, (i64)(u32)a, (i32)f, (u32)|f|, (f==f) + 2(f!=f) + 4(f<b),
    (bool)a + 2(bool)f, fmin(f, b) * 1000, (i64)(f64)f * 1e6 (sign-extended into i64)."""
    from toolchain.compiler.ir import F64, I8
    b = Builder(Module("arith"))
    fn = _kernel(b, "arith", [("a", ptr(I32, G)), ("b", ptr(I32, G)), ("f", ptr(F32, G)),
                              ("out", ptr(I64, G))])
    pa, pb, pf, out = fn.params
    i = global_id(b)
    a, bb, f = (b.load(at(b, p, i)) for p in (pa, pb, pf))
    ua, ub = b.bitcast(a, U32), b.bitcast(bb, U32)
    bf = b.convert(bb, F32)
    c = b.convert
    flags = b.add(b.add(c(b.cmp("eq", f, f), I64), b.mul(c(b.cmp("ne", f, f), I64),
                                                         b.const(I64, 2))),
                  b.mul(c(b.cmp("lt", f, bf), I64), b.const(I64, 4)))
    bools = b.add(c(c(a, BOOL), I64), b.mul(c(c(f, BOOL), I64), b.const(I64, 2)))
    res = [b.div(a, bb), b.rem(a, bb), b.div(ua, ub), b.rem(ua, ub),
           b.binop("shr", a, b.const(I32, 3)), b.binop("shr", ua, b.const(U32, 3)),
           b.binop("shl", a, b.const(I32, 5)), b.binop("min", a, bb),
           b.binop("max", a, bb), b.binop("min", ua, ub), b.binop("max", ua, ub),
           c(a, I8), c(a, U16), c(ua, I64), c(f, I32), c(b.intrinsic("math.fabs", F32, [f]),
                                                        U32),
           flags, bools, c(b.mul(b.binop("min", f, bf), b.const(F32, 1000.0)), I32),
           c(b.mul(c(f, F64), b.const(F64, 1e6)), I64)]
    assert len(res) == ARITH_OUTPUTS
    for k, r in enumerate(res):
        b.store(at(b, out, b.add(b.mul(i, b.const(I32, ARITH_OUTPUTS)), b.const(I32, k))),
                c(r, I64))
    b.ret()
    return b.module


def aggregates_module() -> Module:
    """agg(x: f32*, out: f32*): a struct {f32 s; u8 tag; i64 w} alloca filled through
    fieldptr, copied with memcpy into a second alloca, read back through byteadd; plus a
    constant-space lookup table global and a select: out[i] = copy.s * 2 + table[i % 4]
    + (copy.tag == 7 ? copy.w : -1)."""
    from toolchain.compiler.ir import I8, ArrayType, StructType
    b = Builder(Module("agg"))
    st = StructType("rec", (("s", F32), ("tag", I8), ("w", I64)))
    table = b.global_var("table", ArrayType(F32, 4),
                         struct.pack("<4f", 0.5, 1.5, 2.5, 3.5),
                         constant=True, space="constant")
    fn = _kernel(b, "agg", [("x", ptr(F32, G)), ("out", ptr(F32, G))])
    px, pout = fn.params
    i = global_id(b)
    r1, r2 = b.alloca(st, "r1"), b.alloca(st, "r2")
    b.store(b.fieldptr(r1, 0), b.load(at(b, px, i)))
    b.store(b.fieldptr(r1, 1), b.const(I8, 7))
    b.store(b.fieldptr(r1, 2), b.convert(i, I64))
    b.memcpy(r2, r1, st.size)
    w_ptr = b.bitcast(b.byteadd(r2, b.const(I64, st.offsets[2])), ptr(I64, "private"))
    tag = b.load(b.fieldptr(r2, 1))
    w = b.select(b.cmp("eq", tag, b.const(I8, 7)), b.load(w_ptr), b.const(I64, -1))
    tab = b.elemptr(table)
    entry = b.load(at(b, tab, b.rem(i, b.const(I32, 4))))
    val = b.add(b.add(b.mul(b.load(b.fieldptr(r2, 0)), b.const(F32, 2.0)), entry),
                b.convert(w, F32))
    b.store(at(b, pout, i), val)
    b.ret()
    return b.module
