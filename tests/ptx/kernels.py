"""IR kernels for the PTX backend tests, built through the public IR builder alone.

Each `build_*` returns a fresh `ir.Module`; no frontend is imported, which doubles as the
proof that another frontend can drive the PTX backend through `ir.Builder` only.
"""
from __future__ import annotations

from toolchain.compiler.ir import (BOOL, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, VOID,
                                   Builder, Module, StructType, ptr)

INT_TYPES = (I8, I16, I32, I64, U8, U16, U32, U64)
NUM_TYPES = INT_TYPES + (F32, F64)
SCALAR_TYPES = (BOOL,) + NUM_TYPES


def g(t):
    return ptr(t, "global")


def start(name: str, params, block=None, module: Module | None = None):
    m = module or Module(name)
    b = Builder(m)
    f = b.function(name, params, VOID, kind="kernel", block_shape=block)
    b.position_at_end(b.append_block(f, "entry"))
    return m, b, f


def global_index(b):
    i = b.add(b.mul(b.gpu_index("block", "x"), b.gpu_index("block_dim", "x")),
              b.gpu_index("thread", "x"))
    return b.convert(i, I32)


def at(b, p, i32):
    return b.ptradd(p, b.convert(i32, I64))


def build_vadd() -> Module:
    m, b, f = start("vadd", [("a", g(F32)), ("b", g(F32)), ("c", g(F32)), ("n", I32)],
                    (256, 1, 1))
    a, bb, c, n = f.params
    then, done = b.append_block(f, "then"), b.append_block(f, "exit")
    i = global_index(b)
    b.cbr(b.cmp("lt", i, n), then, done)
    b.position_at_end(then)
    b.store(at(b, c, i), b.add(b.load(at(b, a, i)), b.load(at(b, bb, i))))
    b.br(done)
    b.position_at_end(done)
    b.ret()
    return m


def build_saxpy() -> Module:
    """saxpy calling a .func helper, which calls another; plus an unreachable host fn."""
    m = Module("saxpy")
    b = Builder(m)
    host = b.function("host_only", [("x", I32)], I32)
    b.position_at_end(b.append_block(host, "entry"))
    b.ret(b.add(host.params[0], b.const(I32, 1)))
    inner = b.function("axpy", [("a", F32), ("x", F32), ("y", F32)], F32)
    b.position_at_end(b.append_block(inner, "entry"))
    a, x, y = inner.params
    b.ret(b.add(b.mul(a, x), y))
    flag = b.function("pick", [("on", BOOL), ("v", I8)], I8)
    b.position_at_end(b.append_block(flag, "entry"))
    b.ret(b.select(flag.params[0], flag.params[1], b.const(I8, -3)))
    _, b2, k = start("saxpy", [("n", I32), ("a", F32), ("x", g(F32)), ("y", g(F32)),
                               ("tag", g(I8))], (128, 1, 1), m)
    n, av, xs, ys, tag = k.params
    then, done = b2.append_block(k, "then"), b2.append_block(k, "exit")
    i = global_index(b2)
    b2.cbr(b2.cmp("lt", i, n), then, done)
    b2.position_at_end(then)
    yi = at(b2, ys, i)
    b2.store(yi, b2.call(inner, [av, b2.load(at(b2, xs, i)), b2.load(yi)]))
    tp = at(b2, tag, i)
    b2.store(tp, b2.call(flag, [b2.cmp("gt", i, b2.const(I32, 3)), b2.load(tp)]))
    b2.br(done)
    b2.position_at_end(done)
    b2.ret()
    return m


def build_index3d() -> Module:
    m, b, f = start("index3d", [("out", g(U32))], (8, 4, 2))
    out = f.params[0]
    k = 0
    for kind in ("thread", "block", "block_dim", "grid_dim"):
        for axis in "xyz":
            b.store(b.ptradd(out, b.const(I64, k)), b.gpu_index(kind, axis))
            k += 1
    b.ret()
    return m


def build_math() -> Module:
    m, b, f = start("math", [("x", g(F32)), ("d", g(F64))])
    x, d = f.params
    v = b.load(x)
    for k, name in enumerate(("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp"), 1):
        b.store(b.ptradd(x, b.const(I64, k)), b.intrinsic(f"math.{name}", F32, [v]))
    w = b.load(d)
    for k, name in enumerate(("sqrt", "rsqrt", "fabs"), 1):
        b.store(b.ptradd(d, b.const(I64, k)), b.intrinsic(f"math.{name}", F64, [w]))
    b.ret()
    return m


def _arith_ops(t):
    ops = ["add", "sub", "mul", "div", "min", "max"]
    if t.is_int:
        ops += ["rem", "and", "or", "xor", "shl", "shr"]
    return ops


def build_arith() -> Module:
    """Every arithmetic op, unary op and comparison for every numeric type, plus bool ops."""
    params = [(f"p_{t}", g(t)) for t in NUM_TYPES] + [("flags", g(BOOL))]
    m, b, f = start("arith", params)
    for t, p in zip(NUM_TYPES, f.params):
        x, y = b.load(p), b.load(b.ptradd(p, b.const(I64, 1)))
        k = 2
        for op in _arith_ops(t):
            b.store(b.ptradd(p, b.const(I64, k)), b.binop(op, x, y))
            k += 1
        unops = ["neg"] + (["not"] if t.is_int else [])
        for op in unops:
            b.store(b.ptradd(p, b.const(I64, k)), b.unop(op, x))
            k += 1
        for pred in ("eq", "ne", "lt", "le", "gt", "ge"):
            b.store(b.ptradd(f.params[-1], b.const(I64, k)), b.cmp(pred, x, y))
            k += 1
    fl = f.params[-1]
    p, q = b.load(fl), b.load(b.ptradd(fl, b.const(I64, 1)))
    for k, op in enumerate(("and", "or", "xor"), 100):
        b.store(b.ptradd(fl, b.const(I64, k)), b.binop(op, p, q))
    b.store(b.ptradd(fl, b.const(I64, 103)), b.unop("not", p))
    for k, pred in enumerate(("eq", "ne", "lt", "ge"), 104):
        b.store(b.ptradd(fl, b.const(I64, k)), b.cmp(pred, p, q))
    b.ret()
    return m


def build_casts() -> Module:
    """convert between every pair of scalar types, plus bitcast/ptr casts/addrspacecast."""
    params = [(f"in_{t}", t) for t in SCALAR_TYPES] + \
        [(f"out_{t}", g(t)) for t in SCALAR_TYPES] + [("gen", ptr(F32))]
    m, b, f = start("casts", params)
    ins, outs = f.params[:len(SCALAR_TYPES)], f.params[len(SCALAR_TYPES):-1]
    for src in ins:
        for dt, out in zip(SCALAR_TYPES, outs):
            if src.type != dt:
                b.store(b.ptradd(out, b.const(I64, SCALAR_TYPES.index(src.type))),
                        b.convert(src, dt))
    f32, u32 = ins[SCALAR_TYPES.index(F32)], ins[SCALAR_TYPES.index(U32)]
    outs_u32, outs_f32 = outs[SCALAR_TYPES.index(U32)], outs[SCALAR_TYPES.index(F32)]
    b.store(b.ptradd(outs_u32, b.const(I64, 20)), b.bitcast(f32, U32))
    b.store(b.ptradd(outs_f32, b.const(I64, 20)), b.bitcast(u32, F32))
    gen = f.params[-1]
    as_int = b.ptrtoint(gen, U64)
    back = b.inttoptr(b.add(as_int, b.const(U64, 4)), ptr(F32))
    glob = b.addrspacecast(back, "global")
    b.store(glob, b.load(b.addrspacecast(glob, "generic")))
    b.store(b.ptradd(outs[SCALAR_TYPES.index(U32)], b.const(I64, 21)),
            b.ptrtoint(gen, U32))
    b.ret()
    return m


def build_control() -> Module:
    """Nested loops over locals, a short-circuit `&&`, select, and a loop-carried sum."""
    m, b, f = start("control", [("out", g(I32)), ("n", I32), ("m", I32)], (64, 1, 1))
    out, n, mm = f.params
    i, j, acc = b.local(f, I32, "i"), b.local(f, I32, "j"), b.local(f, I32, "acc")
    blocks = {k: b.append_block(f, k) for k in
              ("outer", "outer_body", "inner", "inner_body", "rhs", "hit", "inner_next",
               "outer_next", "done")}
    zero, one = b.const(I32, 0), b.const(I32, 1)
    b.local_set(i, zero), b.local_set(acc, zero), b.br(blocks["outer"])
    b.position_at_end(blocks["outer"])
    b.cbr(b.cmp("lt", b.local_get(i), n), blocks["outer_body"], blocks["done"])
    b.position_at_end(blocks["outer_body"])
    b.local_set(j, zero), b.br(blocks["inner"])
    b.position_at_end(blocks["inner"])
    b.cbr(b.cmp("lt", b.local_get(j), mm), blocks["inner_body"], blocks["outer_next"])
    b.position_at_end(blocks["inner_body"])          # if (j % 2 == 0 && i != j) acc += i*j
    even = b.cmp("eq", b.rem(b.local_get(j), b.const(I32, 2)), zero)
    b.cbr(even, blocks["rhs"], blocks["inner_next"])
    b.position_at_end(blocks["rhs"])
    b.cbr(b.cmp("ne", b.local_get(i), b.local_get(j)), blocks["hit"], blocks["inner_next"])
    b.position_at_end(blocks["hit"])
    prod = b.mul(b.local_get(i), b.local_get(j))
    b.local_set(acc, b.add(b.local_get(acc), prod)), b.br(blocks["inner_next"])
    b.position_at_end(blocks["inner_next"])
    b.local_set(j, b.add(b.local_get(j), one)), b.br(blocks["inner"])
    b.position_at_end(blocks["outer_next"])
    b.local_set(i, b.add(b.local_get(i), one)), b.br(blocks["outer"])
    b.position_at_end(blocks["done"])
    a = b.local_get(acc)
    b.store(out, b.select(b.cmp("gt", a, b.const(I32, 100)), a, zero))
    b.ret()
    return m


ORDERS_LOAD = ("relaxed", "acquire", "seq_cst")
ORDERS_STORE = ("relaxed", "release", "seq_cst")
ORDERS_RMW = ("relaxed", "acquire", "release", "acq_rel", "seq_cst")
SCOPES = ("work_item", "subgroup", "workgroup", "device", "system")
RMW_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange")


def build_atomics() -> Module:
    m, b, f = start("atomics", [("g32", g(U32)), ("g64", g(U64)), ("gen", ptr(U32))])
    g32, g64, gen = f.params
    wg = b.gpu_alloc("workgroup", U32, 64, "counters")
    for p in (g32, g64, wg, gen):
        t = p.type.pointee
        one = b.const(t, 1)
        scopes = ("work_item", "subgroup", "workgroup") if p is wg else SCOPES
        for scope in scopes:
            for order in ORDERS_LOAD:
                b.store(p, b.atomic_load(p, order, scope))
            for order in ORDERS_STORE:
                b.atomic_store(p, one, order, scope)
            for order in ORDERS_RMW:
                for op in RMW_OPS:
                    b.atomic_rmw(op, p, one, order, scope)
            b.atomic_cmpxchg(p, one, b.const(t, 2), "acq_rel", "acquire", scope)
            b.atomic_cmpxchg(p, one, b.const(t, 2), "seq_cst", "relaxed", scope)
            b.atomic_cmpxchg(p, one, b.const(t, 2), "release", "relaxed", scope)
    b.ret()
    return m


def build_arrays() -> Module:
    """Workgroup, private and dynamic arrays with barriers between the phases."""
    m, b, f = start("arrays", [("x", g(F32)), ("out", g(F32)), ("n", I32)], (256, 1, 1))
    x, out, n = f.params
    tile = b.gpu_alloc("workgroup", F32, 256, "tile")
    scratch = b.gpu_alloc("private", I32, 4, "scratch")
    dyn_f = b.dynamic_shared(F32, "values")
    dyn_u = b.dynamic_shared(U32, "meta")
    lane = b.convert(b.gpu_index("thread", "x"), I32)
    b.store(at(b, tile, lane), b.load(at(b, x, lane)))
    b.store(at(b, scratch, b.const(I32, 1)), lane)
    b.store(at(b, dyn_f, lane), b.load(at(b, x, lane)))
    b.store(at(b, dyn_u, b.add(lane, b.const(I32, 256))), b.convert(lane, U32))
    b.barrier(("workgroup", "global"), "acq_rel")
    v = b.add(b.load(at(b, tile, lane)), b.load(at(b, dyn_f, lane)))
    v = b.add(v, b.convert(b.load(at(b, scratch, b.const(I32, 1))), F32))
    b.barrier()
    b.store(at(b, out, lane), v)
    slot = b.alloca(StructType("pair", (("a", I32), ("b", F32))), "pair")
    b.store(b.fieldptr(slot, 1), v)
    b.store(at(b, out, b.add(lane, n)), b.load(b.fieldptr(slot, 1)))
    b.ret()
    return m


def build_async() -> Module:
    m, b, f = start("stage", [("src", g(U32)), ("out", g(U32)), ("h", ptr(U32))], (32, 1, 1))
    src, out, h = f.params
    tile = b.gpu_alloc("workgroup", U32, 128, "tile")
    base = b.mul(b.convert(b.gpu_index("thread", "x"), I32), b.const(I32, 4))
    b.async_copy(at(b, tile, base), at(b, src, base), b.const(I32, 4), 16, "global")
    b.async_commit()
    b.async_copy(at(b, tile, base), b.addrspacecast(at(b, h, base), "global"),
                 b.const(I32, 2), 8, "all")
    b.async_commit()
    b.async_wait(1)
    b.async_wait(0)
    b.barrier(("workgroup",), "acq_rel")
    b.store(at(b, out, base), b.load(at(b, tile, base)))
    b.ret()
    return m


def build_subgroup(block=(96, 1, 1)) -> Module:
    m, b, f = start("warp", [("u", g(U32)), ("x", g(F32)), ("flags", g(BOOL))], block)
    u, x, flags = f.params
    lane = b.subgroup("local_id", U32)
    b.store(b.ptradd(u, b.const(I64, 40)), b.subgroup("size", U32))
    for k, p in enumerate((u, x)):
        t = p.type.pointee
        v = b.load(at(b, p, b.convert(lane, I32)))
        results = [
            b.subgroup("broadcast", t, [v, b.const(U32, 3)]),
            b.subgroup("shuffle", t, [v, b.sub(b.const(U32, 31), lane)]),
            b.subgroup("reduce", t, [v], {"op": "add"}),
            b.subgroup("reduce", t, [v], {"op": "min"}),
            b.subgroup("reduce", t, [v], {"op": "max"}),
            b.subgroup("scan", t, [v], {"op": "add", "inclusive": True}),
            b.subgroup("scan", t, [v], {"op": "add", "inclusive": False}),
        ]
        for j, r in enumerate(results):
            b.store(b.ptradd(p, b.const(I64, 64 + 8 * j + k)), r)
    odd = b.cmp("ne", b.binop("and", lane, b.const(U32, 1)), b.const(U32, 0))
    b.store(b.ptradd(u, b.const(I64, 1)), b.subgroup("ballot", U32, [odd, b.const(U32, 0)]))
    b.store(b.ptradd(u, b.const(I64, 2)), b.subgroup("ballot", U32, [odd, b.const(U32, 2)]))
    b.store(b.ptradd(u, b.const(I64, 3)), b.subgroup("ballot", U32, [odd, b.load(u)]))
    b.store(flags, b.subgroup("any", BOOL, [odd]))
    b.store(b.ptradd(flags, b.const(I64, 1)), b.subgroup("all", BOOL, [odd]))
    b.ret()
    return m


def build_packed() -> Module:
    """half/bf16 conversions, dp4a/dp2a, prmt, half2 arithmetic, 128-bit vector access."""
    m, b, f = start("packed", [("h", g(U16)), ("x", g(F32)), ("w", g(U32)), ("s", g(I32))])
    h, x, w, s = f.params
    hv, xv, wv = b.load(h), b.load(x), b.load(w)
    b.store(b.ptradd(x, b.const(I64, 1)), b.intrinsic("cvt.h2f", F32, [hv]))
    b.store(b.ptradd(h, b.const(I64, 1)), b.intrinsic("cvt.f2h", U16, [xv]))
    b.store(b.ptradd(x, b.const(I64, 2)), b.intrinsic("cvt.bf2f", F32, [hv]))
    b.store(b.ptradd(h, b.const(I64, 2)), b.intrinsic("cvt.f2bf", U16, [xv]))
    w1 = b.load(b.ptradd(w, b.const(I64, 1)))
    b.store(b.ptradd(w, b.const(I64, 2)), b.intrinsic("int.dp4a", U32, [wv, w1, wv],
                                                      {"signed": False}))
    sv = b.load(s)
    b.store(b.ptradd(s, b.const(I64, 1)), b.intrinsic("int.dp4a", I32, [sv, sv, sv],
                                                      {"signed": True}))
    b.store(b.ptradd(s, b.const(I64, 2)), b.intrinsic("int.dp2a", I32, [sv, sv, sv],
                                                      {"signed": True, "hi": True}))
    b.store(b.ptradd(w, b.const(I64, 3)), b.intrinsic("int.dp2a", U32, [wv, w1, wv],
                                                      {"signed": False, "hi": False}))
    b.store(b.ptradd(w, b.const(I64, 4)), b.intrinsic("int.prmt", U32,
                                                      [wv, w1, b.const(U32, 0x3210)]))
    for k, op in enumerate(("half2.add", "half2.mul"), 5):
        b.store(b.ptradd(w, b.const(I64, k)), b.intrinsic(op, U32, [wv, w1]))
    b.store(b.ptradd(w, b.const(I64, 7)), b.intrinsic("half2.fma", U32, [wv, w1, wv]))
    b.store(b.ptradd(x, b.const(I64, 3)), b.intrinsic("half2.lo", F32, [wv]))
    b.store(b.ptradd(x, b.const(I64, 4)), b.intrinsic("half2.hi", F32, [wv]))
    b.store(b.ptradd(w, b.const(I64, 8)), b.intrinsic("half2.pack", U32, [xv, xv]))
    regs4 = b.gpu_alloc("private", F32, 4, "quad")
    b.intrinsic("vec.load4", VOID, [b.ptradd(x, b.const(I64, 16)), regs4])
    b.intrinsic("vec.store4", VOID, [b.ptradd(x, b.const(I64, 32)), regs4])
    b.ret()
    return m


def build_debug() -> Module:
    m, b, f = start("debug", [("x", g(F32)), ("n", I32), ("c", I8)])
    x, n, c = f.params
    fmt = b.string_literal(b"n=%d x=%f c=%d\n")
    b.intrinsic("debug.print", VOID, [fmt, n, b.load(x), c])
    b.intrinsic("debug.print", VOID, [b.string_literal(b"hello\n")])
    b.intrinsic("debug.assert", VOID, [b.cmp("gt", n, b.const(I32, 0))])
    b.intrinsic("debug.assert", VOID, [n])
    b.ret()
    return m


ALL = {name[6:]: fn for name, fn in sorted(globals().items())
       if name.startswith("build_") and callable(fn)}
