"""Lowering of later-tier expressions that need checked types: method calls
(`recv.m(args)`, resolved statically through the method table built from methods.py's
entries) and `new T`.

Method resolution (by the receiver's checked type, any receiver expression):
1. a method of the receiver's exact type (a struct, a primitive, a pointer type with an
   impl of its own, ...);
2. for a pointer receiver, a method of the pointee, called with a copy of `*recv`;
3. a function-pointer field of that name (`s.cb(3)`, also through a pointer);
else E0019 "no method". The receiver is passed by value (a copy), like any argument.
"""
from __future__ import annotations

from . import ast as A
from ..ir.types import I64, FnPtrType, PtrType, StructType, U8, ptr
from .closures import closure_sig
from .scope import FnSym, TypeSym
from .typesys import describe

NOT_A_METHOD = object()
AMBIGUOUS = "<ambiguous>"       # a method name two impls define for one type


def type_key(t):
    """A hashable identity for method lookup that ignores address spaces and placeholder
    struct contents."""
    if isinstance(t, PtrType):
        return ("ptr", type_key(t.pointee))
    if isinstance(t, StructType):
        return ("struct", t.name)
    return t


class LaterMixin:
    def method_call(self, e: A.Call, discard: bool):
        callee = e.callee
        base = callee.base
        if isinstance(base, A.Name) and isinstance(self.lookup(base.name), TypeSym):
            return NOT_A_METHOD             # `Enum.Variant(...)`, never a method
        recv = self.value(base, None)
        if isinstance(callee, A.Arrow):
            if not isinstance(recv.type, PtrType):
                raise self.fail("E0205", f"`->` needs a pointer to a struct, found "
                                f"{describe(recv.type)}", base.span)
        table = self.ctx.methods
        fn = table.get(type_key(recv.type), {}).get(callee.name)
        if fn is None and isinstance(recv.type, PtrType):
            fn = table.get(type_key(recv.type.pointee), {}).get(callee.name)
            if fn is not None:
                recv = self.b.load(self.struct_view(recv))
        if fn is AMBIGUOUS:
            raise self.fail("E0019", f"method call `.{callee.name}` is ambiguous for type "
                            f"{describe(recv.type)}: several impls define it", callee.span,
                            help="method calls resolve statically by name and receiver "
                            "type: rename one of the methods")
        if fn is not None:
            sym = self.ctx.globals.lookup(fn)
            return self.call_method(e, sym, recv, discard)
        return self.field_call(e, recv, discard)

    def struct_view(self, p):
        """A pointer to a (possibly placeholder) struct, retyped to the complete struct."""
        t = p.type.pointee
        full = self.ctx.structs.full(t) if isinstance(t, StructType) else t
        return p if full is t else self.b.bitcast(p, ptr(full, p.type.space))

    def call_method(self, e: A.Call, sym: FnSym, recv, discard: bool):
        self._no_named(e)
        if not sym.params:
            raise self.fail("E0108", f"`{e.callee.name}` takes no receiver, so it cannot "
                            "be called with method syntax", e.span)
        first = self.coerce(recv, sym.params[0], e.callee.base.span)
        rest = self._args(A.Call(e.callee, e.args, span=e.span), sym.params[1:], sym)
        return self._void_check(self.b.call(sym.fn, [first] + rest, span=e.span), e,
                                discard)

    def field_call(self, e: A.Call, recv, discard: bool):
        """`s.cb(args)`: call through a function-pointer field (no method of that name)."""
        name = e.callee.name
        t = recv.type
        if isinstance(t, PtrType) and isinstance(t.pointee, StructType):
            p = self.struct_view(recv)
        elif isinstance(t, StructType):
            p = self.struct_view(self.spill(recv))
        else:
            raise self.fail("E0019", f"no method `{name}` for {describe(t)}", e.callee.span)
        st = p.type.pointee
        try:
            i = st.field_index(name)
        except KeyError:
            raise self.fail("E0019", f"undefined method `{describe(st)}.{name}` (no method or "
                            "function-pointer field of that name)", e.callee.span)
        fp = self.b.load(self.b.fieldptr(p, i))
        code = closure_sig(fp.type)
        if code is not None:
            return self.closure_call(e, fp, code, discard)
        if not isinstance(fp.type, FnPtrType):
            raise self.fail("E0107", f"field `{name}` of {describe(st)} is not callable",
                            e.callee.span)
        self._no_named(e)
        args = self._args(e, list(fp.type.params), None)
        self.check_callee(fp, e.callee.span)
        return self._void_check(self.b.call_indirect(fp, args), e, discard)

    # ---------------------------------------------------------------- @test builtins
    def test_assert(self, e: A.Call, name: str):
        """`assert(c)` / `assert_eq(a, b)` inside a @test function (testing.py)."""
        if not any(a.name == "test" for a in self.decl.decorators):
            raise self.fail("E0022", f"`{name}` is a compile-time test builtin and can only "
                            "be called inside a @test function", e.callee.span,
                            help="mark the enclosing function @test and run it with `mettle "
                            "test`, or use an if + return instead")
        self._no_named(e)
        want = 1 if name == "assert" else 2
        if len(e.args) != want:
            raise self.fail("E0108", f"`{name}` expects {want} argument(s), found "
                            f"{len(e.args)}", e.span)
        args = [self.rvalue(a, I64) for a in e.args]
        plan = self.ctx.test_plan
        if self.ctx.test_mode:
            helper = self.ctx.globals.lookup("__mt_" + name)
            ident = self.b.const(I64, len(plan.asserts))
            plan.asserts.append((self.decl.name, name, e.span))
            self.b.call(helper.fn, [ident] + args, span=e.span)
        return self.b.const(I64, 0)

    # ---------------------------------------------------------------- new
    def expr_New(self, e: A.New, hint):
        """`new T`: calloc(1, sizeof(T)) typed T* (null when allocation fails)."""
        if self.device:
            raise self.fail("E0202", "`new` allocates on the host heap; device code cannot "
                            "use it", e.span)
        t = self.ctx.resolve_type(e.type)
        if t.size <= 0:
            raise self.fail("E0201", f"`new` needs a sized type, not {describe(t)}",
                            e.type.span)
        calloc = self._runtime_extern("calloc", [("n", I64), ("size", I64)], ptr(U8))
        raw = self.b.call(calloc, [self.b.const(I64, 1), self.b.const(I64, t.size)])
        return self.b.bitcast(raw, ptr(t))
