"""GPU source rules and kernel built-ins (LANGUAGE §3 [GPU], §11; gpu.md).

- Index built-ins `thread/block/block_dim/grid_dim .x/.y/.z` exist only in GPU compiles
  (a host compile sees an undefined name) and only directly in a kernel body (E0310).
- `workgroup var t: T[N]` / `private var` -> gpu.alloc; `workgroup var p: T*` ->
  gpu.dynamic_shared; no initializer, no rebinding (E0312).
- barrier, atomics, async copies, subgroup collectives: kernel-only, with the legality
  rules of §11 and gpu.md "Scoped atomics". tensor_* lowers in lower_tensor.py.
- Extern-declared intrinsics (sqrtf, h2f, dp4a_u32, ...) are recognised by name in device
  code (kernels and reachable helpers); elsewhere they are ordinary extern calls. Any other
  extern called from device code stays a `call` so the shared call-graph verifier rejects it.
- Device helper pointer parameters are `global` unless some call site passes a workgroup,
  private or generic pointer; then the checker re-lowers with that parameter `generic` and
  the call sites addrspacecast (see lower_ops._args and api.compile_to_ir).
"""
from __future__ import annotations

from . import ast as A
from ..ir.types import BOOL, F32, I32, I64, U16, U32, U64, VOID, ArrayType, PtrType, ptr
from ..ir import ops as O
from .scope import VarSym
from .typesys import describe

INDEX_NAMES = ("thread", "block", "block_dim", "grid_dim")
LEGACY_INDEX = {f"gpu_{reg}_{ax}": (kind, ax) for reg, kind in
                (("tid", "thread"), ("ctaid", "block"), ("ntid", "block_dim"),
                 ("nctaid", "grid_dim")) for ax in "xyz"}
_PF32, _PU32 = ptr(F32), ptr(U32)
INTRINSICS = {
    **{f"{n}f": (f"math.{n}", (F32,), F32, {}) for n in
       ("sqrt", "rsqrt", "fabs", "sin", "cos", "log", "exp")},
    "h2f": ("cvt.h2f", (U16,), F32, {}), "f2h": ("cvt.f2h", (F32,), U16, {}),
    "bf2f": ("cvt.bf2f", (U16,), F32, {}), "f2bf": ("cvt.f2bf", (F32,), U16, {}),
    "f32_from_bits": ("bitcast", (U32,), F32, {}),
    "bits_from_f32": ("bitcast", (F32,), U32, {}),
    "dp4a_u32": ("int.dp4a", (U32, U32, U32), U32, {"signed": False}),
    "dp4a_s32": ("int.dp4a", (I32, I32, I32), I32, {"signed": True}),
    **{f"dp2a_{h}_{s}32": ("int.dp2a", (t, t, t), t, {"signed": s == "s", "hi": h == "hi"})
       for h in ("lo", "hi") for s, t in (("u", U32), ("s", I32))},
    "prmt_b32": ("int.prmt", (U32, U32, U32), U32, {}),
    "hadd2": ("half2.add", (U32, U32), U32, {}), "hmul2": ("half2.mul", (U32, U32), U32, {}),
    "hfma2": ("half2.fma", (U32, U32, U32), U32, {}),
    "h2f_lo": ("half2.lo", (U32,), F32, {}), "h2f_hi": ("half2.hi", (U32,), F32, {}),
    "f2h2": ("half2.pack", (F32, F32), U32, {}),
    "load4_f32": ("vec.load4", (_PF32, _PF32), VOID, {}),
    "load4_u32": ("vec.load4", (_PU32, _PU32), VOID, {}),
    "store4_f32": ("vec.store4", (_PF32, _PF32), VOID, {}),
    "store4_u32": ("vec.store4", (_PU32, _PU32), VOID, {}),
    "gpu_print": ("debug.print", ("fmt",), VOID, {}),
    "gpu_print_i32": ("debug.print", ("fmt", I32), VOID, {}),
    "gpu_print_f32": ("debug.print", ("fmt", F32), VOID, {}),
    "gpu_print_2i32": ("debug.print", ("fmt", I32, I32), VOID, {}),
    "gpu_assert": ("debug.assert", (BOOL,), VOID, {}),
    "gpu_barrier": ("gpu.barrier", (), VOID, {}),
}
_ORDERS = set(O.MEMORY_ORDERS)
_LOAD_ORDERS = {"relaxed", "acquire", "seq_cst"}
_STORE_ORDERS = {"relaxed", "release", "seq_cst"}
_ACQ_RANK = {"relaxed": 0, "release": 0, "acquire": 1, "acq_rel": 1, "seq_cst": 2}
_RMW = {"fetch_add": "add", "fetch_sub": "sub", "fetch_min": "min", "fetch_max": "max",
        "fetch_and": "and", "fetch_or": "or", "fetch_xor": "xor", "exchange": "exchange"}


class GpuMixin:
    # ---------------------------------------------------------------- recognition
    def is_index_builtin(self, e: A.Member) -> bool:
        return self.ctx.gpu and isinstance(e.base, A.Name) and \
            e.base.name in INDEX_NAMES and self.lookup(e.base.name) is None

    def is_intrinsic(self, name: str) -> bool:
        return name in INTRINSICS or name in LEGACY_INDEX

    def is_gpu_builtin(self, name: str, sym) -> bool:
        if sym is not None:
            return self.device and self.is_intrinsic(name)
        return name.startswith(("atomic_", "subgroup_", "async_copy_", "tensor_", "tile_")) or \
            (self.ctx.gpu and name in LEGACY_INDEX)

    def kernel_only(self, what: str, span) -> None:
        if not self.in_kernel:
            raise self.fail("E0310", f"{what} is only legal directly inside a GPU kernel",
                            span)

    def index_builtin(self, e: A.Member):
        self.kernel_only(f"`{e.base.name}.{e.name}`", e.span)
        if e.name not in O.AXES:
            raise self.fail("E0205", f"`{e.base.name}` has no member `{e.name}` (x, y, z)",
                            e.span)
        return self.b.gpu_index(e.base.name, e.name, span=e.span)

    # ---------------------------------------------------------------- calls
    def gpu_call(self, e: A.Call, name: str, sym, discard: bool):
        if name in LEGACY_INDEX:
            self.kernel_only(f"`{name}()`", e.span)
            v = self.b.gpu_index(*LEGACY_INDEX[name], span=e.span)
            ret = sym.ret if sym is not None and sym.ret != VOID else U32
            return self.to_numeric(v, ret, e.span)
        if name in INTRINSICS and sym is not None:
            return self.intrinsic_call(e, name, sym)
        if name.startswith("tile_") or (name == "tensor_matmul" and self.is_tile_expr(e)):
            return self.tile_scalar_use(e, name)
        if name.startswith("tensor_"):
            from .lower_tensor import tensor_call
            return tensor_call(self, e, name)
        self.kernel_only(f"`{name}`", e.span)
        if name.startswith("atomic_") and name[7:] in ("load", "store", "compare_exchange",
                                                       *_RMW):
            return self.atomic_call(e, name[7:])
        if name.startswith("subgroup_"):
            return self.subgroup_call(e, name[9:])
        if name in ("async_copy_workgroup", "async_copy_commit", "async_copy_wait"):
            return self.async_call(e, name)
        raise self.fail("E0101", f"undefined function `{name}`", e.callee.span)

    def _arity(self, e: A.Call, n: int, code: str) -> None:
        if len(e.args) != n:
            raise self.fail(code, f"expected {n} argument(s), found {len(e.args)}", e.span)

    def intrinsic_call(self, e: A.Call, name: str, sym):
        op, params, ret, attrs = INTRINSICS[name]
        self._no_named(e)
        self._arity(e, len(params), "E0325")
        args = []
        for a, t in zip(e.args, params):
            if t == "fmt":
                if not isinstance(a, A.StrLit):
                    raise self.fail("E0325", "the format must be a string literal", a.span)
                args.append(self.b.string_literal(a.value))
            elif t == BOOL:
                args.append(self.cond(a))
            else:
                args.append(self.rvalue(a, t, keep_space=True))
        if op == "gpu.barrier":
            return self.b.barrier(("workgroup",), "seq_cst", span=e.span)
        if op == "bitcast":
            v = self.b.bitcast(args[0], ret, span=e.span)
        else:
            v = self.b.intrinsic(op, ret, args, attrs, span=e.span)
        if ret != VOID and sym.ret != VOID and sym.ret != ret:
            v = self.coerce(v, sym.ret, e.span)
        return v

    def _options(self, e: A.Call, allowed: set[str], code: str) -> dict:
        out = {}
        for name, value, span in e.named_args:
            if name not in allowed:
                raise self.fail(code, f"unknown option `{name}:` (expected one of "
                                f"{', '.join(sorted(allowed))})", span)
            if name in out:
                raise self.fail(code, f"option `{name}:` given twice", span)
            out[name] = value
        return out

    def _word(self, v: A.Expr, choices, code: str, what: str) -> str:
        if isinstance(v, A.Name) and v.name in choices:
            return v.name
        raise self.fail(code, f"{what} must be one of {', '.join(choices)}", v.span)

    # ---------------------------------------------------------------- atomics
    def atomic_call(self, e: A.Call, kind: str):
        extra = {"load": 0, "compare_exchange": 2}.get(kind, 1)
        self._arity(e, 2 + extra, "E0320")
        cas = kind == "compare_exchange"
        allowed = {"order", "scope", "space"} | ({"success_order", "failure_order"}
                                                 if cas else set())
        opts = self._options(e, allowed, "E0320")
        p = self.value(e.args[0], None)
        if not (isinstance(p.type, PtrType) and p.type.pointee in (U32, U64)):
            raise self.fail("E0320", f"atomics need a uint32* or uint64* (or a workgroup "
                            f"array of them), found {describe(p.type)}", e.args[0].span)
        ep = self.b.ptradd(p, self.index_value(e.args[1]))
        vals = [self.rvalue(a, p.type.pointee) for a in e.args[2:]]
        space, scope = self._atomic_space_scope(opts, p, e)
        orders = {k: self._word(v, O.MEMORY_ORDERS, "E0320", f"`{k}:`")
                  for k, v in opts.items() if k.endswith("order")}
        order = orders.get("order", "seq_cst")
        kw = dict(scope=scope, space=space, span=e.span)
        if kind == "load":
            self._order_in(order, _LOAD_ORDERS, "atomic_load", opts.get("order"))
            return self.b.atomic_load(ep, order, **kw)
        if kind == "store":
            self._order_in(order, _STORE_ORDERS, "atomic_store", opts.get("order"))
            return self.b.atomic_store(ep, vals[0], order, **kw)
        if cas:
            succ = orders.get("success_order", order)
            fail = orders.get("failure_order", _derived_failure(succ))
            at = opts.get("failure_order", e)
            if fail in ("release", "acq_rel"):
                raise self.fail("E0320", f"CAS failure order cannot be {fail}", at.span)
            if _ACQ_RANK[fail] > _ACQ_RANK[succ]:
                raise self.fail("E0320", f"CAS failure order {fail} is stronger than the "
                                f"success order {succ}", at.span)
            return self.b.atomic_cmpxchg(ep, vals[0], vals[1], succ, fail, **kw)
        return self.b.atomic_rmw(_RMW[kind], ep, vals[0], order, **kw)

    def _order_in(self, order, allowed, what, at) -> None:
        if order not in allowed:
            raise self.fail("E0320", f"{what} does not allow order {order} (allowed: "
                            f"{', '.join(sorted(allowed))})", at.span)

    def _atomic_space_scope(self, opts, p, e):
        known = p.type.space if p.type.space in ("global", "workgroup") else None
        space = known or "global"
        if "space" in opts:
            space = self._word(opts["space"], ("global", "workgroup"), "E0320", "`space:`")
            if known and known != space:
                raise self.fail("E0320", f"`space: {space}` but the pointer is in {known} "
                                "memory", opts["space"].span)
        scope = "workgroup" if space == "workgroup" else "device"
        if "scope" in opts:
            scope = self._word(opts["scope"], O.SCOPES, "E0320", "`scope:`")
            if space == "workgroup" and scope in ("device", "system"):
                raise self.fail("E0320", f"a workgroup atomic cannot use {scope} scope",
                                opts["scope"].span)
        return space, scope

    # ---------------------------------------------------------------- subgroup
    def _sg_value(self, a: A.Expr, op: str):
        """The value of broadcast/shuffle/reduce/scan: exactly uint32 or float32 (gpu.md);
        an untyped literal becomes uint32. Other types are E0322 with the cast to write."""
        v = self.value(a, U32)
        if v.type in (U32, F32):
            return v
        to = "float32" if v.type.is_float else "uint32"
        raise self.fail("E0322", f"subgroup_{op} takes a uint32 or float32 value, found "
                        f"{describe(v.type)}", a.span,
                        help=f"convert it explicitly: `subgroup_{op}(({to})value)`")

    def _sg_pred(self, a: A.Expr, what: str):
        """A vote/ballot predicate: an expression of type bool (a comparison, `&&`, `||`,
        `!`, a bool value); a number is E0322, not an implicit `!= 0`."""
        if isinstance(a, A.Binary) and a.op in ("==", "!=", "<", "<=", ">", ">=", "&&",
                                                "||") or \
                isinstance(a, A.Unary) and a.op == "!":
            return self.cond(a)
        v = self.value(a, None)
        if v.type.is_bool:
            return v
        raise self.fail("E0322", f"the predicate of {what} must be a bool, found "
                        f"{describe(v.type)}", a.span,
                        help="compare explicitly, e.g. `value != 0`")

    def _sg_lane(self, a: A.Expr):
        v = self.value(a, U32)
        if not v.type.is_int:
            raise self.fail("E0322", f"a lane must be an integer, found {describe(v.type)}",
                            a.span)
        return self.b.convert(v, U32)

    def subgroup_call(self, e: A.Call, op: str):
        if e.named_args:
            name, _, span = e.named_args[0]
            raise self.fail("E0322", f"subgroup_{op} takes no named options, found "
                            f"`{name}:`", span, help="subgroup collectives have no order or "
                            "scope: the scope is the subgroup")
        b, sp = self.b, e.span
        if op in ("local_id", "size"):
            self._arity(e, 0, "E0322")
            return b.subgroup(op, U32, span=sp)
        if op in ("broadcast", "shuffle"):
            self._arity(e, 2, "E0322")
            v = self._sg_value(e.args[0], op)
            return b.subgroup(op, v.type, [v, self._sg_lane(e.args[1])], span=sp)
        if op in ("reduce_add", "reduce_min", "reduce_max", "scan_inclusive_add",
                  "scan_exclusive_add"):
            self._arity(e, 1, "E0322")
            v = self._sg_value(e.args[0], op)
            if op.startswith("reduce"):
                return b.subgroup("reduce", v.type, [v], {"op": op[7:]}, span=sp)
            return b.subgroup("scan", v.type, [v], {"op": "add",
                                                    "inclusive": "inclusive" in op}, span=sp)
        if op == "ballot":
            self._arity(e, 2, "E0322")
            pred = self._sg_pred(e.args[0], "subgroup_ballot")
            w = self.value(e.args[1], None)
            if not w.type.is_int:
                raise self.fail("E0322", f"ballot word must be an integer, found "
                                f"{describe(w.type)}", e.args[1].span)
            return b.subgroup("ballot", U32, [pred, b.convert(w, U32)], span=sp)
        if op in ("any", "all"):
            self._arity(e, 1, "E0322")
            return b.subgroup(op, BOOL, [self._sg_pred(e.args[0], f"subgroup_{op}")],
                              span=sp)
        raise self.fail("E0101", f"undefined function `subgroup_{op}`", e.callee.span)

    # ---------------------------------------------------------------- async copies
    def async_call(self, e: A.Call, name: str):
        if name == "async_copy_commit":
            self._arity(e, 0, "E0321")
            self._options(e, set(), "E0321")
            return self.b.async_commit(span=e.span)
        if name == "async_copy_wait":
            self._arity(e, 1, "E0321")
            self._options(e, set(), "E0321")
            n = self.const_int(e.args[0])
            if n is None or not 0 <= n <= 7:
                raise self.fail("E0321", "async_copy_wait needs a constant 0..7",
                                e.args[0].span)
            return self.b.async_wait(n, span=e.span)
        self._arity(e, 3, "E0321")
        opts = self._options(e, {"transaction", "cache"}, "E0321")
        dst, src = self.value(e.args[0], None), self.value(e.args[1], None)
        for v, sp, a in ((dst, "workgroup", e.args[0]), (src, "global", e.args[1])):
            if not (isinstance(v.type, PtrType) and v.type.space == sp):
                raise self.fail("E0321", f"async copy needs a {sp} pointer here, found "
                                f"{describe(v.type)} in {getattr(v.type, 'space', '-')} "
                                "memory", a.span)
        if dst.type.pointee != src.type.pointee:
            raise self.fail("E0321", "async copy source and destination element types "
                            "differ", e.span)
        tx = self.const_int(opts["transaction"]) if "transaction" in opts else None
        if tx not in (4, 8, 16):
            at = opts.get("transaction", e)
            raise self.fail("E0321", "`transaction:` must be 4, 8 or 16", at.span)
        cache = self._word(opts["cache"], ("all", "global"), "E0321", "`cache:`") \
            if "cache" in opts else "all"
        count = self.rvalue(e.args[2], I32)
        n = self.const_int(e.args[2])
        if n is not None and (n * dst.type.pointee.size) % tx:
            raise self.fail("E0321", f"{n} elements of {dst.type.pointee.size} bytes are "
                            f"not a multiple of the {tx}-byte transaction", e.args[2].span)
        return self.b.async_copy(dst, src, count, tx, cache, span=e.span)

    # ---------------------------------------------------------------- statements
    def stmt_Barrier(self, s: A.Barrier) -> None:
        self.kernel_only("`barrier`", s.span)
        regions = tuple(s.regions) or ("workgroup",)
        if not set(regions) <= {"workgroup", "global"}:
            raise self.fail("E0323", "barrier regions are workgroup and/or global", s.span)
        order = s.order or "seq_cst"
        if order not in ("acquire", "release", "acq_rel", "seq_cst"):
            raise self.fail("E0323", f"barrier order {order} is not allowed", s.span)
        self.b.barrier(regions, order, span=s.span)

    def gpu_var(self, d: A.VarDecl) -> None:
        self.kernel_only(f"`{d.storage} var`", d.span)
        if d.init is not None:
            raise self.fail("E0312", f"{d.storage} var `{d.name}` cannot have an "
                            "initializer", d.init.span)
        t = self.ctx.resolve_type(d.type)
        if isinstance(t, ArrayType) and (t.elem.is_int or t.elem.is_float):
            p = self.b.gpu_alloc(d.storage, t.elem, t.count, d.name, span=d.span)
        elif d.storage == "workgroup" and isinstance(t, PtrType) and \
                (t.pointee.is_int or t.pointee.is_float):
            p = self.b.dynamic_shared(t.pointee, d.name, span=d.span)
        else:
            raise self.fail("E0312", f"{d.storage} var needs a scalar numeric array type"
                            + (" or a pointer view" if d.storage == "workgroup" else "")
                            + f", found {describe(t)}", d.span)
        self.scope.names[d.name] = VarSym(d.name, p.type, "gpu", p, d.span,
                                          storage_class=d.storage)


def _derived_failure(success: str) -> str:
    return {"acq_rel": "acquire", "release": "relaxed"}.get(success, success)
