"""Small builder kernels isolating single features for golden and structure tests."""
from __future__ import annotations

from toolchain.compiler.ir import F32, I64, U32, U64, Builder, Module, ptr
from tests.spirv_emit.irkernels import _kernel

BARRIER_FORMS = [(("workgroup",), "seq_cst"), (("workgroup",), "acquire"),
                 (("global",), "release"), (("workgroup", "global"), "acq_rel")]


def barriers_module(forms=BARRIER_FORMS) -> Module:
    """barriers(): one gpu.barrier per (regions, order) form, in order."""
    b = Builder(Module("barriers"))
    _kernel(b, "barriers", [])
    for regions, order in forms:
        b.barrier(regions, order)
    b.ret()
    return b.module


def one_atomic_module(kind: str, elem=U32, space: str = "global", order: str = "seq_cst",
                      scope: str | None = None, failure: str = "relaxed") -> Module:
    """atom(p, v, out): a single atomic of `kind` (load/store/cmpxchg or an rmw op name)
    on p[0] (global) or a workgroup array; the result (if any) is stored to out[0]."""
    b = Builder(Module("atom"))
    fn = _kernel(b, "atom", [("p", ptr(elem, "global")), ("v", elem),
                             ("out", ptr(elem, "global"))])
    p, v, out = fn.params
    if space == "workgroup":
        p = b.gpu_alloc("workgroup", elem, 4, "cells")
    kw = {"scope": scope}
    if kind == "load":
        r = b.atomic_load(p, order, **kw)
    elif kind == "store":
        r = b.atomic_store(p, v, order, **kw)
    elif kind == "cmpxchg":
        r = b.atomic_cmpxchg(p, v, b.add(v, b.const(elem, 1)), order, failure, **kw)
    else:
        r = b.atomic_rmw(kind, p, v, order, **kw)
    if kind != "store":
        b.store(out, r)
    b.ret()
    return b.module


def generic_module() -> Module:
    """generic(p: ptr<f32> generic kernel arg, q: global): casts between spaces and
    pointer/integer round trips: q[0] = *(ptr)(int)p + *(global)(generic)q."""
    b = Builder(Module("generic"))
    fn = _kernel(b, "generic", [("p", ptr(F32)), ("q", ptr(F32, "global"))])
    p, q = fn.params
    as_int = b.ptrtoint(p, U64)
    back = b.inttoptr(as_int, ptr(F32))
    gq = b.addrspacecast(q, "generic")
    q2 = b.addrspacecast(gq, "global")
    b.store(b.ptradd(q2, b.const(I64, 0)), b.add(b.load(back), b.load(gq)))
    b.ret()
    return b.module
