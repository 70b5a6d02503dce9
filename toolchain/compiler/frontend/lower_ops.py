"""Operators, casts, memory expressions, literals and calls (LANGUAGE §2, §4).

Binary arithmetic uses typesys.arith_result (integer promotion to int32, then the wider
operand type; an untyped integer literal brings literal_type, a float literal adopts the
other float type). Shifts have the promoted type of the left operand alone, as in C.
`p + n` / `p - n` scale by the element (ptradd), `p1 - p2` is the byte difference as int64.
`>>` is arithmetic or logical by the operand's signedness (the IR `shr` takes it from the
type). `/` or `%` by a constant 0 is M0116. Comparisons and `&&`/`||` of constants fold
exactly (lower_expr._FOLDABLE), like constant arithmetic.
"""
from __future__ import annotations

from . import ast as A
from ..ir.checks import runtime_extern
from ..ir.types import BOOL, F64, I32, I64, U8, U64, VOID, FnPtrType, PtrType, ptr
from .consteval import NOT_CONST, ConstDivZero, const_value
from .lower_expr import _ARITH, _CMP
from .closures import closure_sig, data_pointer
from .lower_later import NOT_A_METHOD
from .scope import FnSym, TypeSym, VarSym
from .testing import is_test
from .typesys import STRING, arith_result, describe, literal_type, promote

GPU_CALL_PREFIXES = ("atomic_", "subgroup_", "async_copy_", "tensor_")


class OpsMixin:
    # ---------------------------------------------------------------- operands
    def operands(self, e: A.Binary, hint):
        lu, ru = self.untyped(e.left), self.untyped(e.right)
        if lu and not ru:
            r = self.value(e.right, hint)
            return self.literal(e.left, self._lit_hint(e.left, r.type)), r
        l = self.value(e.left, hint)
        if ru:
            return l, self.literal(e.right, self._lit_hint(e.right, l.type))
        return l, self.value(e.right, hint)

    def own_type(self, e: A.Expr, v):
        """The type an untyped integer operand brings: a const name's declared type, else
        literal_type (int32, int64 above int32's range, uint64 above int64's)."""
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            if isinstance(sym, VarSym) and sym.type.is_int:
                return sym.type
        return literal_type(v)

    def _lit_hint(self, e: A.Expr, other):
        """The type an untyped operand takes beside a typed operand of type `other`."""
        if isinstance(other, (PtrType, FnPtrType)):
            return I64
        try:
            v = const_value(e, self.lookup)
        except ConstDivZero:
            v = NOT_CONST
        if isinstance(v, float):
            return other if other.is_float else F64
        if other.is_float or v is NOT_CONST or isinstance(v, bool) or \
                not (other.is_int or other.is_bool):
            return I32 if other.is_bool else other
        return arith_result(other, self.own_type(e, v))

    def shift_operands(self, e: A.Binary, hint):
        """C shifts: the result has the promoted type of the left operand alone."""
        lu, ru = self.untyped(e.left), self.untyped(e.right)
        if lu and not ru:
            r = self.value(e.right, None)
            v = self.const_int(e.left)
            return self.literal(e.left, None if v is None else self.own_type(e.left, v)), r
        l = self.value(e.left, hint)
        if ru:
            want = promote(l.type) if (l.type.is_int or l.type.is_bool) else None
            return l, self.literal(e.right, want)
        return l, self.value(e.right, None)

    def expr_Binary(self, e: A.Binary, hint):
        if e.op in ("&&", "||"):
            return self.b.convert(self.logic(e), I32)
        if e.op in _CMP:
            return self.b.convert(self.compare(e), I32)
        shift = e.op in ("<<", ">>")
        l, r = self.shift_operands(e, hint) if shift else self.operands(e, hint)
        if e.op in ("+", "-") and (isinstance(l.type, PtrType) or
                                   isinstance(r.type, PtrType)):
            return self.pointer_arith(e, l, r)
        if e.op == "+" and l.type == STRING and r.type == STRING:
            return self.string_concat(e, l, r)
        if not (_numeric(l.type) and _numeric(r.type)):
            raise self.fail("E0202", f"operator `{e.op}` is not defined for "
                            f"{describe(l.type)} and {describe(r.type)}", e.span)
        if shift:
            t = promote(l.type)
            if not (t.is_int and (r.type.is_int or r.type.is_bool)):
                raise self.fail("E0202", f"`{e.op}` needs integers", e.span)
            return self.b.binop(_ARITH[e.op], self.b.convert(l, t), self.b.convert(r, t))
        t = arith_result(l.type, r.type)
        if t.is_float and e.op == "%":
            raise self.fail("E0004", "`%` is integer-only; a float operand needs a cast",
                            e.span)
        if t.is_float and e.op in ("&", "|", "^"):
            raise self.fail("E0202", f"`{e.op}` is not defined for floats", e.span)
        l, r = self.b.convert(l, t), self.b.convert(r, t)
        if e.op in ("/", "%") and t.is_int:
            if self.const_int(e.right) == 0:
                self.error("M0116", "constant divide by zero", e.right.span)
            self.check_divisor(r, e.op, e.span)
        return self.b.binop(_ARITH[e.op], l, r)

    def _runtime_extern(self, link: str, params, ret):
        """A libc function the lowering itself calls, declared once under a hidden name."""
        return runtime_extern(self.b, f".rt.{link}", params, ret, link)

    def string_concat(self, e: A.Binary, l, r):
        """`s1 + s2`: a new NUL-terminated heap string (LANGUAGE §4, §12.2); never freed."""
        if self.device:
            raise self.fail("E0202", "string concatenation allocates and is host-only",
                            e.span)
        b = self.b
        parts = []
        for v in (l, r):
            slot = b.alloca(STRING)
            b.store(slot, v)
            parts.append((b.load(b.fieldptr(slot, 0)), b.load(b.fieldptr(slot, 1))))
        (lc, ln), (rc, rn) = parts
        total = b.add(ln, rn)
        malloc = self._runtime_extern("malloc", [("size", I64)], ptr(U8))
        memcpy = self._runtime_extern("memcpy", [("dst", ptr(U8)), ("src", ptr(U8)),
                                                 ("n", I64)], ptr(U8))
        buf = b.call(malloc, [b.convert(b.add(total, b.const(U64, 1)), I64)])
        b.call(memcpy, [buf, lc, b.convert(ln, I64)])
        b.call(memcpy, [b.ptradd(buf, b.convert(ln, I64)), rc, b.convert(rn, I64)])
        b.store(b.ptradd(buf, b.convert(total, I64)), b.const(U8, 0))
        out = b.alloca(STRING)
        b.store(b.fieldptr(out, 0), buf)
        b.store(b.fieldptr(out, 1), total)
        return b.load(out)

    def pointer_arith(self, e: A.Binary, l, r):
        lp, rp = data_pointer(l.type), data_pointer(r.type)
        if lp and rp and e.op == "-":
            return self.b.sub(self.b.ptrtoint(l, I64), self.b.ptrtoint(r, I64))
        if lp and not rp and (r.type.is_int or r.type.is_bool):
            idx = self.b.convert(r, I64)
            if e.op == "-":
                idx = self.b.unop("neg", idx)
            return self.b.ptradd(l, idx)
        if rp and not lp and e.op == "+" and l.type.is_int:
            return self.b.ptradd(r, self.b.convert(l, I64))
        raise self.fail("E0202", f"operator `{e.op}` is not defined for {describe(l.type)} "
                        f"and {describe(r.type)}", e.span)

    def compare(self, e: A.Binary):
        folded = self.folded_bool(e)
        if folded is not None:
            return folded
        l, r = self.operands(e, None)
        lp = isinstance(l.type, (PtrType, FnPtrType))
        rp = isinstance(r.type, (PtrType, FnPtrType))
        if e.op not in ("==", "!=") and any(closure_sig(t) is not None
                                            for t in (l.type, r.type)):
            raise self.fail("E0202", f"`{e.op}` does not order closures: they compare with "
                            "== and != only", e.span)
        if lp or rp:
            if not lp:
                l = self.coerce(l, r.type, e.left.span)
            elif not rp:
                r = self.coerce(r, l.type, e.right.span)
            elif l.type != r.type:
                l, r = self._common_ptr(l), self._common_ptr(r)
                r = self.b.bitcast(r, l.type)
            return self.b.cmp(_CMP[e.op], l, r)
        if not (_numeric(l.type) and _numeric(r.type)):
            raise self.fail("E0202", f"cannot compare {describe(l.type)} with "
                            f"{describe(r.type)}", e.span)
        t = arith_result(l.type, r.type)
        return self.b.cmp(_CMP[e.op], self.b.convert(l, t), self.b.convert(r, t))

    def folded_bool(self, e: A.Binary):
        """A comparison or `&&`/`||` of constants, computed exactly (lower_expr._FOLDABLE)."""
        if not self.untyped(e):
            return None
        try:
            v = const_value(e, self.lookup)
        except ConstDivZero as z:
            raise self.fail("M0116", "constant divide by zero", z.span)
        return None if v is NOT_CONST else self.b.const(BOOL, bool(v))

    def _common_ptr(self, v):
        if isinstance(v.type, FnPtrType):
            return self.b.bitcast(v, ptr(U8))
        return self.b.addrspacecast(v, "generic")

    def cond(self, e: A.Expr):
        """A bool for control flow; a pointer condition is E0016."""
        if isinstance(e, A.Binary) and e.op in _CMP:
            return self.compare(e)
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            return self.logic(e)
        if isinstance(e, A.Unary) and e.op == "!":
            return self.negate(e.operand)
        return self._truth(self.value(e, None), e)

    def _truth(self, v, e: A.Expr):
        """A loaded condition value as a bool (E0016 for pointers and aggregates)."""
        if v.type.is_bool:
            return v
        if v.type.is_int or v.type.is_float:
            return self.b.cmp("ne", v, self.b.const(v.type, 0))
        if isinstance(v.type, (PtrType, FnPtrType)):
            raise self.fail("E0016", "a pointer is not a condition", e.span,
                            help="compare it explicitly: `p != 0`")
        raise self.fail("E0016", f"condition must be numeric, not {describe(v.type)}",
                        e.span)

    def logic(self, e: A.Binary):
        folded = self.folded_bool(e)
        if folded is not None:
            return folded
        tmp = self.b.local(self.fn, BOOL, "sc")
        self.b.local_set(tmp, self.cond(e.left))
        rhs, end = self.new_block("sc.rhs"), self.new_block("sc.end")
        c = self.b.local_get(tmp)
        if e.op == "&&":
            self.b.cbr(c, rhs, end)
        else:
            self.b.cbr(c, end, rhs)
        self.b.position_at_end(rhs)
        self.b.local_set(tmp, self.cond(e.right))
        self.b.br(end)
        self.b.position_at_end(end)
        return self.b.local_get(tmp)

    # ---------------------------------------------------------------- unary & casts
    def negate(self, operand: A.Expr):
        """`!x`: 1 when x is zero; on a pointer (or function pointer), 1 when it is null
        (the one pointer-truthiness form the language has: `if (!p)`)."""
        if not (isinstance(operand, A.Binary) and operand.op in ("&&", "||") or
                isinstance(operand, A.Binary) and operand.op in _CMP or
                isinstance(operand, A.Unary) and operand.op == "!"):
            v = self.value(operand, None)
            if isinstance(v.type, (PtrType, FnPtrType)):
                return self.b.cmp("eq", v, self.b.const(v.type, 0))
            return self.b.unop("not", self._truth(v, operand))
        return self.b.unop("not", self.cond(operand))

    def expr_Unary(self, e: A.Unary, hint):
        if e.op == "!":
            return self.b.convert(self.negate(e.operand), I32)
        v = self.value(e.operand, hint)
        if v.type.is_bool or (v.type.is_int and e.op in "-~"):
            v = self.b.convert(v, promote(v.type))     # C promotes unary operands too
        if e.op == "+" and _numeric(v.type):
            return v
        if e.op == "-" and (v.type.is_int or v.type.is_float):
            return self.b.unop("neg", v)
        if e.op == "~" and v.type.is_int:
            return self.b.unop("not", v)
        raise self.fail("E0202", f"unary `{e.op}` is not defined for {describe(v.type)}",
                        e.span)

    def expr_Cast(self, e: A.Cast, hint):
        t = self.ctx.resolve_type(e.type)
        if self.untyped(e.expr):
            return self.cast(self.literal(e.expr, None), t, e.span)
        return self.cast(self.value(e.expr, None), t, e.span)

    def cast(self, v, t, span):
        s = v.type
        if s == t:
            return v
        if _numeric(s) and _numeric(t):
            return self.to_numeric(v, t, span) if not (s.is_float and t.is_bool) else \
                self.b.cmp("ne", v, self.b.const(s, 0.0))
        sp, tp = isinstance(s, (PtrType, FnPtrType)), isinstance(t, (PtrType, FnPtrType))
        if sp and tp:
            space = s.space if isinstance(s, PtrType) else "generic"
            if isinstance(t, PtrType):
                v = self.b.bitcast(v, ptr(t.pointee, space))
                if not self.device and space != t.space:
                    v = self.b.addrspacecast(v, t.space)
                return v
            return self.b.bitcast(v, t)
        if (s.is_int or s.is_bool) and tp:
            if isinstance(t, PtrType) and self.device:
                t = ptr(t.pointee, "global")
            return self.b.inttoptr(self.b.convert(v, I64), t)
        if sp and (t.is_int or t.is_bool):
            return self.b.convert(self.b.ptrtoint(v, I64), t)
        if s == STRING and isinstance(t, PtrType) and t.pointee == U8:
            return self.coerce(v, t, span)
        raise self.fail("E0204", f"cannot cast {describe(s)} to {describe(t)}", span)

    # ---------------------------------------------------------------- memory
    def expr_AddrOf(self, e: A.AddrOf, hint):
        op = e.operand
        if isinstance(op, A.Name):
            sym = self.lookup(op.name)
            if isinstance(sym, FnSym) and sym.fn is not None:
                return self.function_value(sym, e.span)
            if isinstance(sym, VarSym) and sym.kind in ("local", "param") and self.device:
                raise self.fail("E0311", f"`&{op.name}`: device code cannot take the "
                                "address of a local", e.span, help="use `private var`")
            if isinstance(sym, VarSym):
                self._mark(sym)
        if not isinstance(op, (A.Name, A.Index, A.Member, A.Arrow, A.Deref)):
            raise self.fail("E0109", "`&` needs an lvalue", e.span)
        return self.addr(op)

    def expr_Deref(self, e: A.Deref, hint):
        return self.b.load(self.addr(e))

    def expr_Index(self, e: A.Index, hint):
        return self.b.load(self.addr(e))

    def expr_Arrow(self, e: A.Arrow, hint):
        return self.b.load(self.addr(e))

    def expr_Member(self, e: A.Member, hint):
        if self.is_index_builtin(e):
            return self.index_builtin(e)
        key = self.ctx.qualified(e, self.lookup, self.fail)
        if key is not None:                    # `alias.x` through `import ... as`
            return self.expr_Name(A.Name(key, span=e.span), hint)
        if isinstance(e.base, A.Name):
            owner = self.lookup(e.base.name)
            if isinstance(owner, TypeSym) and owner.enum is not None:
                return self.qualified_variant(e, owner)
            enum = self.qualified_tagged(e.base)
            if enum is not None:
                return self.construct(enum, e.name, [], e.span)     # `Token.Plus`
        return self.b.load(self.addr(e))

    def qualified_variant(self, e: A.Member, owner: TypeSym):
        """`Color.Red`: the plain enum variant, typed like the bare name."""
        sym = self.lookup(e.name)
        if not (isinstance(sym, VarSym) and sym.enum == owner.enum and sym.kind == "const"):
            raise self.fail("E0101", f"enum `{owner.name}` has no variant `{e.name}`", e.span)
        return self.make_const(sym.storage, sym.type, e.span)

    def expr_SizeOf(self, e: A.SizeOf, hint):
        t = self.ctx.value_type(e.type, "`sizeof`'s operand")
        return self.b.const(I64, t.size)    # int64 whatever the context (a narrow hint wrapped it)

    def expr_StrLit(self, e: A.StrLit, hint):
        chars = self.b.elemptr(self.b.string_literal(e.value))
        if isinstance(hint, PtrType) and hint.pointee == U8:
            return chars
        tmp = self.b.alloca(STRING, "str")
        self.b.store(self.b.fieldptr(tmp, 0), chars)
        self.b.store(self.b.fieldptr(tmp, 1), self.b.const(U64, len(e.value)))
        return self.b.load(tmp)

    expr_ImportStr = expr_StrLit       # an embedded file is a string literal (embed.py)

    def expr_TupleExpr(self, e, hint):
        raise self.fail("E0201", "a tuple is only allowed as a dispatch grid/block", e.span)

    # ---------------------------------------------------------------- calls
    def expr_Call(self, e: A.Call, hint, discard: bool = False):
        callee = e.callee
        if e.type_args:     # instances were renamed by generics.py: this one is not generic
            raise self.fail("E0018", f"`{getattr(callee, 'name', '?')}` is not a generic "
                            "function, so it takes no type arguments", e.span)
        if isinstance(callee, A.Member):       # `alias.f(...)` through `import ... as`
            key = self.ctx.qualified(callee, self.lookup, self.fail)
            if key is not None:
                callee = A.Name(key, span=callee.span)
        if isinstance(callee, A.Member) and self.ctx.tagged:
            enum = self.qualified_tagged(callee.base)
            if enum is not None:                                    # `Token.Number(42)`
                self._no_named(e)
                return self.construct(enum, callee.name, e.args, e.span)
        if isinstance(callee, (A.Member, A.Arrow)) and callee.name in self.ctx.method_names:
            r = self.method_call(e, discard)
            if r is not NOT_A_METHOD:
                return r
        if isinstance(callee, A.Name):
            sym = self.lookup(callee.name)
            if sym is None or (isinstance(sym, FnSym) and sym.is_extern and
                               self.is_intrinsic(callee.name)):
                if self.is_gpu_builtin(callee.name, sym):
                    return self.gpu_call(e, callee.name, sym, discard)
                if sym is None and callee.name in ("assert", "assert_eq"):
                    return self.test_assert(e, callee.name)
                enum = None if sym is not None else \
                    self.variant_owner(callee.name, hint, callee.span)
                if enum is not None:                                # `Number(42)`
                    self._no_named(e)
                    return self.construct(enum, callee.name, e.args, e.span)
                if sym is None and e.refused:
                    from .lower_stmt import Abort   # its type arguments' error is reported
                    raise Abort()
                if sym is None:
                    name = callee.name
                    help = (f"`{name}` is generic: a call spells its type arguments, "
                            f"`{name}<...>(...)`" if name in self.ctx.generic_fns else
                            self.near_miss(name, functions=True))
                    raise self.fail(*self.ctx.unknown(name, "function"), callee.span, help)
            if isinstance(sym, FnSym):
                return self.direct_call(e, sym, discard)
        fp = self.value(callee, None)
        code = closure_sig(fp.type)
        if code is not None:
            return self.closure_call(e, fp, code, discard)
        self._no_named(e)
        if not isinstance(fp.type, FnPtrType):
            raise self.fail("E0107", f"{describe(fp.type)} is not callable", callee.span)
        args = self._args(e, list(fp.type.params), None)
        self.check_callee(fp, callee.span)
        return self._void_check(self.b.call_indirect(fp, args, span=e.span), e, discard)

    def _no_named(self, e: A.Call) -> None:
        if e.named_args:
            raise self.fail("E0212", "named arguments are only accepted by GPU built-ins",
                            e.named_args[0].span)

    def _args(self, e: A.Call, params, sym):
        if len(e.args) != len(params):
            raise self.fail("E0108", f"expected {len(params)} argument(s), found "
                            f"{len(e.args)}", e.span)
        out = []
        for i, (a, t) in enumerate(zip(e.args, params)):
            v = self.rvalue(a, t, keep_space=True)
            if isinstance(t, PtrType) and isinstance(v.type, PtrType) and \
                    v.type.space != t.space:
                if t.space == "generic":
                    v = self.b.addrspacecast(v, "generic")
                elif sym is not None and self.device:
                    self.ctx.wanted_generic.add((sym.name, i))
                    v = self.b.const(t, 0)    # re-lowered with a generic parameter
                else:
                    v = self.coerce(v, t, a.span)
            out.append(v)
        return out

    def direct_call(self, e: A.Call, sym: FnSym, discard: bool):
        self._no_named(e)
        if sym.fn is None:
            raise self.fail("E0107", f"kernel `{sym.name}` cannot be called; launch it "
                            "with `dispatch`", e.callee.span)
        if sym.decl.decorators and is_test(sym.decl) and not self.ctx.test_mode and \
                not is_test(self.decl):
            raise self.fail("E0022", f"`{sym.name}` is a @test function: only `mettle test` "
                            "runs it, other code cannot call it", e.callee.span)
        args = self._args(e, sym.params, sym)
        return self._void_check(self.b.call(sym.fn, args, span=e.span), e, discard)

    def _void_check(self, v, e, discard: bool):
        if v.type == VOID and not discard:
            raise self.fail("E0201", "a void call has no value", e.span)
        return v


def _numeric(t) -> bool:
    return t.is_int or t.is_float or t.is_bool
