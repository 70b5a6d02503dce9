"""Function values of the later tier: lambdas, closures (`Fn`) and thin-to-closure adapters.

Types: `fn(A) -> R` is a thin pointer to a function (FnPtrType). `Fn(A) -> R` is a closure:
a pointer to a heap record whose field 0 is the code pointer, a function taking the record
(as `uint8*`) first and then the declared parameters; one field per captured variable
follows. In IR the closure type is a pointer to the header struct `Fn.<signature>` holding
just the code field, so two closure types are equal exactly when their signatures are.

Lambdas (`fn (x: int32) -> int32 { ... }`) are lifted into internal functions named
`__lambda_<enclosing>_<k>`, lowered after the function that contains them. A lambda that
names no local or parameter of the enclosing function is a thin pointer to that function.
One that does captures them by value at creation: the record is `calloc`ed (never freed)
and filled each time the lambda expression is evaluated; inside, the captured names refer to
the record's fields, which are mutable and persist across calls of that closure value.
Lambdas nest; an inner lambda copies what it uses from the outer one's record. Local integer
constants are folded into the lambda rather than captured.

A thin value of matching signature is adapted wherever it meets an `Fn` slot (declarations,
assignments, returns, arguments): an adapter function per signature calls the thin pointer
kept in a small record. Never the other way (E0201). Device code has neither (E0505).
"""
from __future__ import annotations

from . import ast as A
from ..ir.types import I64, U8, VOID, FnPtrType, PtrType, StructType, ptr
from .scope import VarSym
from .substitute import _fields
from .typesys import closure_sig, describe


def closure_type(module, params: tuple, ret) -> PtrType:
    code = FnPtrType((ptr(U8),) + tuple(params), ret)
    sig = describe(code)
    name = "Fn." + "".join(c if c.isalnum() else "_" for c in sig)
    header = StructType(name, (("code", code),))
    module.structs.setdefault(name, header)
    return ptr(header)


def data_pointer(t) -> bool:
    """Whether `t` is a pointer to data: a closure is a pointer to its record underneath,
    but opaque (no indexing, `*`, `.`, arithmetic, nor conversion through `uint8*`)."""
    return isinstance(t, PtrType) and closure_sig(t) is None


def free_names(body) -> set[str]:
    out: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, A.Name):
            out.add(n.name)
        if isinstance(n, A.Node):
            for f in _fields(type(n)):
                v = getattr(n, f)
                if isinstance(v, (A.Node, list, tuple)):
                    stack.append(v)
        elif isinstance(n, (list, tuple)):
            stack.extend(x for x in n if isinstance(x, (A.Node, list, tuple)))
    return out


class ClosureMixin:
    def expr_Lambda(self, e: A.Lambda, hint):
        if self.device:
            raise self.fail("E0505", "lambdas and closures cannot be used in device code "
                            "(no indirect calls there)", e.span)
        ctx = self.ctx
        params = [ctx.value_type(p.type, "a parameter") for p in e.params]
        ret = ctx.resolve_type(e.ret)
        own = {p.name for p in e.params}
        captures, consts = [], {}
        for name in sorted(free_names(e.body) - own):
            sym = self.lookup(name)
            if not isinstance(sym, VarSym) or ctx.globals.lookup(name) is sym:
                continue
            if sym.kind == "const" and isinstance(sym.storage, (int, float)):
                consts[name] = sym
            elif sym.kind in ("local", "param"):
                captures.append((name, sym))
        ctx.lambda_count[self.sym.name] = k = ctx.lambda_count.get(self.sym.name, 0) + 1
        name = f"__lambda_{self.fn.name}_{k}"
        if not captures:
            fn = self._lift(name, e, params, ret, None, [], consts)
            return fn
        env_fields = [("code", FnPtrType((ptr(U8),) + tuple(params), ret))] + \
            [(n, s.type) for n, s in captures]
        env_t = StructType(f"env.{name}", tuple(env_fields))
        ctx.module.structs[env_t.name] = env_t
        fn = self._lift(name, e, params, ret, env_t, [n for n, _ in captures], consts)
        env = self._new_record(env_t)
        self.b.store(self.b.fieldptr(env, 0), fn)
        for i, (n, _) in enumerate(captures):
            self.b.store(self.b.fieldptr(env, i + 1), self.value(A.Name(n, span=e.span), None))
        return self.b.bitcast(env, closure_type(ctx.module, params, ret))

    def _new_record(self, t: StructType):
        calloc = self._runtime_extern("calloc", [("n", I64), ("size", I64)], ptr(U8))
        raw = self.b.call(calloc, [self.b.const(I64, 1), self.b.const(I64, t.size)])
        return self.b.bitcast(raw, ptr(t))

    def _lift(self, name, e: A.Lambda, params, ret, env_t, captured, consts):
        from .lower_fn import LambdaLowerer
        from .scope import FnSym
        dummy = A.NamedType("void", span=e.span)
        decl_params = list(e.params)
        named = [(p.name, t) for p, t in zip(e.params, params)]
        if env_t is not None:
            decl_params = [A.Param("__env", dummy, span=e.span)] + decl_params
            named = [("__env", ptr(U8))] + named
        decl = A.FnDecl(name, decl_params, e.ret, e.body, span=e.span)
        fn = self.b.function(name, named, ret, linkage="internal", span=e.span)
        sym = FnSym(name, decl, [t for _, t in named], ret, fn=fn)
        self.ctx.pending_lambdas.append(LambdaLowerer(self.ctx, sym, env_t, captured,
                                                      consts))
        return fn

    # ---------------------------------------------------------------- calls, adaptation
    def closure_call(self, e: A.Call, c, code: FnPtrType, discard: bool):
        self._no_named(e)
        args = self._args(e, list(code.params[1:]), None)
        self.check_callee(c, e.callee.span)         # after the arguments, as a thin call
        fp = self.b.load(self.b.fieldptr(c, 0))
        call = self.b.call_indirect(fp, [self.b.bitcast(c, ptr(U8))] + args)
        return self._void_check(call, e, discard)

    def adapt_thin(self, v, t, span):
        """A thin function value in an `Fn` slot: wrap it in an adapter closure."""
        code = closure_sig(t)
        thin = FnPtrType(code.params[1:], code.ret)
        if v.type != thin:
            raise self._mismatch(t, v.type, span)
        if self.device:
            raise self.fail("E0505", "closures cannot be used in device code", span)
        adapter = self.ctx.adapters.get(thin)
        env_t = StructType("env.adapter." + t.pointee.name[3:],
                           (("code", code), ("thin", thin)))
        if adapter is None:
            adapter = self._make_adapter(thin, env_t, span)
        env = self._new_record(env_t)
        self.b.store(self.b.fieldptr(env, 0), adapter)
        self.b.store(self.b.fieldptr(env, 1), v)
        return self.b.bitcast(env, t)

    def _make_adapter(self, thin: FnPtrType, env_t, span):
        from .lower_fn import LambdaLowerer
        from .scope import FnSym
        ctx = self.ctx
        ctx.module.structs[env_t.name] = env_t
        name = f"__fn_adapter_{len(ctx.adapters) + 1}"
        dummy = A.NamedType("void", span=span)
        params = [A.Param(f"a{i}", dummy, span=span) for i in range(len(thin.params))]
        call = A.Call(A.Name("thin", span=span), [A.Name(p.name, span=span) for p in params],
                      span=span)
        body = A.Block([A.ExprStmt(call, span=span) if thin.ret == VOID else
                        A.Return(call, span=span)], span=span)
        decl = A.FnDecl(name, [A.Param("__env", dummy, span=span)] + params, None, body,
                        span=span)
        named = [("__env", ptr(U8))] + [(p.name, t) for p, t in zip(params, thin.params)]
        fn = self.b.function(name, named, thin.ret, linkage="internal", span=span)
        sym = FnSym(name, decl, [t for _, t in named], thin.ret, fn=fn)
        ctx.adapters[thin] = fn
        ctx.pending_lambdas.append(LambdaLowerer(ctx, sym, env_t, ["thin"], {}))
        return fn
