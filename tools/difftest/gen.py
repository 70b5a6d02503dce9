"""Seeded random host programs (LANGUAGE §2-§5 host subset) that are free of undefined
behaviour in both Mettle and C (with -fwrapv), so any output difference is a bug.

Covered: every integer width and both float types in mixed arithmetic (and every operator
on pairs of typed variables), literals of every literal type and spelling (decimal, hex,
binary, char), casts, shifts, comparisons, `&&`/`||`/`!`, local consts and globals (scalars
and arrays), arrays, structs (with array and nested struct fields) by value, by pointer and
returned by value, void helpers writing through pointers to the caller's variables, helpers
with up to 12 mixed parameters, bounded recursion, `for .. in` (typed, inclusive), C `for`
and `while` loops with `break`/`continue`, `switch` with ranges and fall-through, pointer
arithmetic and byte differences, `sizeof`, if/else-if, compound assignment, float values
printed through `f2i` (a guarded float-to-int64). Rules that keep C defined: divisors are
`(e & 255) + 1`, shift amounts are masked below the promoted width, a helper that writes
through a pointer is called only as a whole statement (operand order is unspecified in both
languages), float-to-int conversion only goes through `f2i`.
"""
from __future__ import annotations

import random

from .model import FLOATS, INTS, arith, bits, is_float, is_int, promote, wrap
from .program import (AddrOf, Assign, Bin, Call, Case, Cast, CFor, Decl, Deref, ExprStmt,
                      Field, FieldIndex, ForRange, Function, If, Index, Jump, Lit, Print,
                      Program, PtrDiff, PtrRead, Return, SizeOf, Struct, Switch, Un, Var,
                      While)

INT_LITS = [0, 1, 2, 3, 5, 7, 9, 31, 100, 127, 128, 200, 255, 256, 1000, 32767, 32768, 65535,
            65536, 100000, 2147483647, 2147483648, 3000000000, 4294967295, 4294967296,
            1 << 40, 9223372036854775807, 18446744073709551615, -1, -2, -7, -100, -128,
            -129, -32768, -40000, -2147483648, -2147483649, -9223372036854775808]
FLOAT_LITS = [0.0, 0.5, 1.5, -2.25, 0.1, 3.0, 10.0, 1e10, -0.001, 123.456, 65536.0]
ARITH = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]
CMPS = ["<", "<=", ">", ">=", "==", "!="]
SCALARS = list(INTS) + list(FLOATS)


class Scope:
    def __init__(self, parent=None):
        self.parent = parent
        self.items: list[tuple] = []    # (kind, name, type, extra)

    def all(self):
        s, out = self, []
        while s is not None:
            out += s.items
            s = s.parent
        return out

    def add(self, *item):
        self.items.append(item)


class Gen:
    def __init__(self, seed: int, size: int = 1, prefix: str = ""):
        self.seed = seed
        self.prefix = prefix        # for top-level names, so programs can share a binary
        self.rng = random.Random(seed)
        self.size = size
        self.n = 0
        self.structs: list[Struct] = []
        self.helpers: list[tuple[Function, bool]] = []     # (function, pure)
        self.struct_helpers: list[Function] = []            # return a struct by value
        self.loops: list[str] = []      # enclosing "for" | "while" | "switch", innermost last
        self.outs: dict[str, set] = {}  # helper -> its out-pointer parameters (`*p = v`)

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def scalar_type(self, floats: bool = True) -> str:
        r = self.rng
        if floats and r.random() < 0.2:
            return r.choice(list(FLOATS))
        return r.choice(list(INTS))

    # ------------------------------------------------------------ expressions
    def leaf(self, scope: Scope, want: str | None):
        r = self.rng
        items = [it for it in scope.all() if it[0] in ("var", "const", "ro", "array",
                                                       "struct", "sptr", "aptr", "optr",
                                                       "roarray")]
        if items and r.random() < 0.8:
            kind, name, t, extra = r.choice(items)
            if kind in ("var", "ro"):
                return Var(name, t)
            if kind == "const":
                return Var(name, t, extra)
            if kind == "optr":
                return Deref(name, t)
            if kind in ("array", "aptr", "roarray"):
                return Index(name, self.leaf_int(scope), extra, t)
            return self.member(name, t, kind == "sptr", scope)
        if want == "float" or (want is None and r.random() < 0.15):
            return Lit(r.choice(FLOAT_LITS))
        v = r.choice(INT_LITS) if r.random() < 0.7 else r.randint(-300, 300)
        k = r.random()
        return Lit(v, spelling="hex" if k < 0.12 else "bin" if k < 0.16 else
                   "char" if k < 0.2 else "dec")

    def member(self, base: str, sname: str, arrow: bool, scope: Scope):
        """A scalar field, an element of an array field, or a field of a nested struct."""
        st = self.struct_named(sname)
        if st.nested and self.rng.random() < 0.3:
            fname, inner = self.rng.choice(st.nested)
            return self.member(f"{base}{'->' if arrow else '.'}{fname}", inner, False, scope)
        if st.arrays and self.rng.random() < 0.35:
            fname, ft, n = self.rng.choice(st.arrays)
            return FieldIndex(base, fname, self.leaf_int(scope), n, ft, arrow)
        fname, ft = self.rng.choice(st.fields)
        return Field(base, fname, ft, arrow=arrow)

    def struct_named(self, name: str) -> Struct:
        return next(s for s in self.structs if s.name == name)

    def int_expr(self, scope: Scope, depth: int):
        for _ in range(8):
            e = self.expr(scope, depth, "int")
            if is_int(e.ty):
                return e
        return self.leaf_int(scope)

    def leaf_int(self, scope: Scope):
        ints = [it for it in scope.all() if it[0] in ("var", "ro") and is_int(it[2])]
        if ints:
            _, name, t, _ = self.rng.choice(ints)
            return Var(name, t)
        return Lit(self.rng.choice(INT_LITS))

    def typed_int(self, scope: Scope, depth: int):
        """An integer expression that is not an untyped literal (one side of a binary)."""
        e = self.int_expr(scope, depth)
        return e if not isinstance(e, Lit) else self.leaf_int(scope)

    def expr(self, scope: Scope, depth: int, want: str | None = None):
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(scope, want)
        k = r.random()
        if k < 0.55:
            return self.binary(scope, depth, want)
        if k < 0.68:
            e = self.expr(scope, depth - 1, want)
            if isinstance(e, Lit):
                return e
            if is_int(e.ty):
                op = r.choice(["-", "~", "!"])
                return Un(op, e, "int32" if op == "!" else promote(e.ty))
            return Un("-", e, e.ty) if want != "int" else Un("!", e, "int32")
        if k < 0.82:
            return self.cast(scope, depth, want)
        if k < 0.92 and self.helpers:
            call = self.call(scope, depth, pure_only=True)
            if call is not None:
                return call
        if want != "float":
            return self.memory_expr(scope, depth) or self.leaf(scope, want)
        return self.leaf(scope, want)

    def memory_expr(self, scope: Scope, depth: int):
        """Pointer difference (bytes), pointer-plus-integer reads, sizeof."""
        r = self.rng
        arrays = [it for it in scope.all() if it[0] == "array"]
        k = r.random()
        if arrays and k < 0.4:
            _, name, t, n = r.choice(arrays)
            return PtrDiff(name, self.leaf_int(scope), self.leaf_int(scope), n)
        if arrays and k < 0.7:
            _, name, t, n = r.choice(arrays)
            e = PtrRead(name, self.leaf_int(scope), n, t)
            return e if is_int(t) else Call("f2i", [e], "int64")
        if self.structs and r.random() < 0.3:
            return SizeOf(r.choice(self.structs).name)
        return SizeOf(r.choice(SCALARS), r.choice([0, 0, 3, 100]))

    def cast(self, scope: Scope, depth: int, want):
        r = self.rng
        e = self.expr(scope, depth - 1)
        if is_float(e.ty):
            if want == "float" or (want is None and r.random() < 0.4):
                return Cast(r.choice(list(FLOATS)), e)
            f2i = Call("f2i", [e], "int64")
            return Cast(r.choice(list(INTS)), f2i) if r.random() < 0.5 else f2i
        t = r.choice(list(FLOATS)) if want == "float" else r.choice(list(INTS))
        return Cast(t, e)

    def binary(self, scope: Scope, depth: int, want):
        r = self.rng
        op = r.choice(ARITH + CMPS + ["&&", "||"]) if want != "float" else \
            r.choice(["+", "-", "*", "/"])
        if op in CMPS or op in ("&&", "||"):
            a, b = self.expr(scope, depth - 1), self.expr(scope, depth - 1)
            if isinstance(a, Lit) and isinstance(b, Lit):
                a = self.leaf_int(scope)
            self.adopt(a, b)
            return Bin(op, a, b, "int32")
        if op in ("%", "&", "|", "^", "<<", ">>") or want == "int":
            a = self.int_expr(scope, depth - 1)
            if op in ("<<", ">>"):
                w = bits(promote(a.ty))
                amt = Bin("&", self.int_expr(scope, depth - 1), Lit(w - 1), "")
                amt.ty = arith(amt.l.ty, "int32")
                return Bin(op, a, amt, promote(a.ty))
            b = self.int_expr(scope, depth - 1)
        else:
            a, b = self.expr(scope, depth - 1, want), self.expr(scope, depth - 1, want)
        if isinstance(a, Lit) and isinstance(b, Lit):
            a = self.leaf_int(scope) if is_int(b.ty) else self.leaf(scope, "float")
            if isinstance(a, Lit) and isinstance(a.value, int):
                a = Cast("int32", a)        # (a float literal pair folds alike in C)
        if op in ("/", "%") and is_int(b.ty) and not is_float(a.ty):
            b = Bin("+", Bin("&", b, Lit(255), arith(b.ty, "int32")), Lit(1), "")
            b.ty = arith(b.l.ty, "int32")
        if op == "%" and (is_float(a.ty) or is_float(b.ty)):
            op = "-"
        self.adopt(a, b)
        return Bin(op, a, b, arith(a.ty, b.ty))

    @staticmethod
    def adopt(a, b) -> None:
        """A float literal beside a float32 operand is float32 (§12.9)."""
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Lit) and isinstance(x.value, float):
                x.float_as = "float32" if y.ty == "float32" else "float64"
            if isinstance(x, Lit) and isinstance(x.value, int) and is_float(y.ty):
                # keep int literals next to floats exactly representable in both rounding
                # paths (Python float() then float32 vs C's direct int-to-float)
                if abs(x.value) > (1 << 24):
                    x.value = 7

    def call(self, scope: Scope, depth: int, pure_only: bool):
        r = self.rng
        choices = [(f, p) for f, p in self.helpers if p or not pure_only]
        if not choices:
            return None
        fn, _ = r.choice(choices)
        return self.call_fn(scope, fn, depth)

    def call_fn(self, scope: Scope, fn: Function, depth: int):
        r = self.rng
        args = []
        for pname, pt in fn.params:
            if pname in self.outs.get(fn.name, ()):
                vs = [it for it in scope.all() if it[0] == "var" and it[2] == pt[:-1]]
                if not vs:
                    return None
                args.append(AddrOf(r.choice(vs)[1], pt))
                continue
            if fn.recursive and pname == "d":       # bounded depth
                args.append(Bin("&", self.int_expr(scope, depth - 1), Lit(15), "int32"))
                args[-1].ty = arith(args[-1].l.ty, "int32")
                continue
            arg = self.arg_for(scope, pt, depth)
            if arg is None:
                return None
            args.append(arg)
        return Call(fn.name, args, fn.ret)

    def arg_for(self, scope: Scope, pt: str, depth: int):
        r = self.rng
        if pt.endswith("*"):
            base = pt[:-1]
            if base in INTS or base in FLOATS:
                arrs = [it for it in scope.all() if it[0] == "array" and it[2] == base
                        and it[3] >= 8]
                return AddrOf(f"{r.choice(arrs)[1]}[0]", pt) if arrs else None
            ss = [it for it in scope.all() if it[0] == "struct" and it[2] == base]
            return AddrOf(r.choice(ss)[1], pt) if ss else None
        if pt in INTS or pt in FLOATS:
            e = self.expr(scope, depth - 1, "float" if is_float(pt) else "int")
            if is_float(e.ty) and is_int(pt):
                e = Call("f2i", [e], "int64")
            return e
        ss = [it for it in scope.all() if it[0] == "struct" and it[2] == pt]
        return Var(r.choice(ss)[1], pt) if ss else None

    # ------------------------------------------------------------ statements
    def lvalue(self, scope: Scope):
        r = self.rng
        items = [it for it in scope.all() if it[0] in ("var", "array", "struct", "sptr",
                                                       "optr")]
        if not items:
            return None
        kind, name, t, extra = r.choice(items)
        if kind == "var":
            return Var(name, t)
        if kind == "optr":
            return Deref(name, t)
        if kind == "array":
            return Index(name, self.int_expr(scope, 1), extra, t)
        return self.member(name, t, kind == "sptr", scope)

    def value_for(self, scope: Scope, t: str, depth: int):
        e = self.expr(scope, depth, "float" if is_float(t) else "int")
        if is_float(e.ty) and is_int(t):
            e = Call("f2i", [e], "int64")
        return e

    def stmt(self, scope: Scope, depth: int, in_loop: int, allow_impure: bool):
        r = self.rng
        if allow_impure and r.random() < 0.12:
            p = self.pair(scope)
            if p is not None:
                return p
        k = r.random()
        if k < 0.2:
            return self.decl(scope)
        if k < 0.5:
            target = self.lvalue(scope)
            if target is None:
                return self.decl(scope)
            op = "="
            if is_int(target.ty) and r.random() < 0.35:
                op = r.choice(["+=", "-=", "*=", "&=", "|=", "^=", "<<=", ">>=", "/=", "%="])
                if op in ("<<=", ">>="):
                    w = bits(promote(target.ty))
                    v = Bin("&", self.int_expr(scope, 1), Lit(w - 1), "")
                    v.ty = arith(v.l.ty, "int32")
                    return Assign(target, v, op)
                if op in ("/=", "%="):
                    b = self.int_expr(scope, 1)
                    v = Bin("+", Bin("&", b, Lit(255), arith(b.ty, "int32")), Lit(1), "")
                    v.ty = arith(v.l.ty, "int32")
                    return Assign(target, v, op)
            elif is_float(target.ty) and r.random() < 0.2:
                op = r.choice(["+=", "-=", "*="])
            return Assign(target, self.value_for(scope, target.ty, 3), op)
        if k < 0.62 and allow_impure:       # printing is a side effect: main only
            e = self.expr(scope, 3)
            return Print(Call("f2i", [e], "int64") if is_float(e.ty) else e)
        if k < 0.72 and depth > 0:
            cond = self.expr(scope, 2)
            then = self.block(scope, depth - 1, in_loop, allow_impure, r.randint(1, 3))
            if r.random() < 0.25:           # `else if`
                els = [If(self.expr(scope, 2), self.block(scope, depth - 1, in_loop,
                                                           allow_impure, r.randint(1, 2)),
                          self.block(scope, depth - 1, in_loop, allow_impure, r.randint(0, 1)))]
            else:
                els = self.block(scope, depth - 1, in_loop, allow_impure, r.randint(0, 2))
            return If(cond, then, els)
        if k < 0.82 and depth > 0 and in_loop < 2:
            inner = Scope(scope)
            v = self.fresh("i")
            inner.add("ro", v, "int32", None)
            kind = r.choice(["for", "cfor", "while"])
            lt = r.choice(["", "", "int64", "uint8", "uint32"]) if kind == "for" else ""
            if lt:
                inner.items[-1] = ("ro", v, lt, None)
            self.loops.append("while" if kind == "while" else "for")
            try:
                body = self.block(inner, depth - 1, in_loop + 1, allow_impure,
                                  r.randint(1, 3), scope=inner)
            finally:
                self.loops.pop()
            if kind == "for":
                return ForRange(v, r.randint(0, 6), body, r.random() < 0.3, lt)
            if kind == "cfor":
                return CFor(v, r.randint(0, 6), body)
            return While(v, r.randint(0, 5), body)
        if k < 0.86 and depth > 0:
            return self.switch(scope, depth, in_loop, allow_impure)
        if k < 0.89 and self.loops:
            return self.jump(scope)
        if k < 0.91:
            copy = self.struct_copy(scope)
            if copy is not None:
                return copy
        if k < 0.97 and allow_impure and self.helpers:
            call = None
            if r.random() < 0.5:                # a setter whose out-pointers can be fed
                have = {it[2] for it in scope.all() if it[0] == "var"}
                ok = [f for f, _ in self.helpers if f.name in self.outs and
                      all(dict(f.params)[p][:-1] in have for p in self.outs[f.name])]
                if ok:
                    call = self.call_fn(scope, r.choice(ok), 2)
            call = call or self.call(scope, 2, pure_only=False)
            if call is not None:
                if call.ty == "void" or r.random() < 0.3:
                    return ExprStmt(call)
                ints = [it for it in scope.all() if it[0] == "var"]
                if ints:
                    _, name, t, _ = r.choice(ints)
                    if is_int(t) == is_int(call.ty) or is_float(t):
                        return Assign(Var(name, t), call)
                return ExprStmt(call)
        if not allow_impure:
            return self.decl(scope)
        e = self.expr(scope, 3)
        return Print(Call("f2i", [e], "int64") if is_float(e.ty) else e)

    def switch(self, scope: Scope, depth, in_loop, allow_impure):
        r = self.rng
        subject = self.int_expr(scope, 2)
        points = sorted(r.sample(range(-6, 24), r.randint(1, 5)))
        cases, used = [], set()
        for p in points:
            if p in used:
                continue
            hi = None
            if r.random() < 0.25 and p + 1 not in points:
                hi = p + r.randint(1, 3)
                if any(q in points for q in range(p + 1, hi + 1)):
                    hi = None
            used.update(range(p, (hi or p) + 1))
            cases.append((p, hi))
        for extra in (300, 65535, 40000, -300):
            if r.random() < 0.1 and extra not in used:
                cases.append((extra, None))
                used.add(extra)
        self.loops.append("switch")
        try:
            out = [Case(lo, hi, self.block(scope, depth - 1, in_loop, allow_impure,
                                           r.randint(0, 2)), r.random() < 0.7)
                   for lo, hi in cases]
            default = self.block(scope, depth - 1, in_loop, allow_impure, r.randint(0, 2)) \
                if r.random() < 0.6 else None
        finally:
            self.loops.pop()
        return Switch(subject, out, default)

    def jump(self, scope: Scope):
        """`if (c) { break; }` or `continue` (only where the step cannot be skipped)."""
        loop = next((k for k in reversed(self.loops) if k != "switch"), None)
        kind = "continue" if loop == "for" and self.rng.random() < 0.5 else "break"
        return If(self.expr(scope, 1), [Jump(kind)])

    def struct_copy(self, scope: Scope):
        r = self.rng
        ss = [it for it in scope.all() if it[0] == "struct"]
        if not ss:
            return None
        _, name, t, _ = r.choice(ss)
        mk = [f for f in self.struct_helpers if f.ret == t]
        if mk and r.random() < 0.5:
            fn = r.choice(mk)
            args = [self.arg_for(scope, pt, 2) for _, pt in fn.params]
            if all(a is not None for a in args):
                return Assign(Var(name, t), Call(fn.name, args, t))
        same = [it for it in ss if it[2] == t and it[1] != name]
        return Assign(Var(name, t), Var(r.choice(same)[1], t)) if same else None

    def block(self, parent: Scope, depth, in_loop, allow_impure, n, scope=None):
        scope = scope or Scope(parent)
        return [self.stmt(scope, depth, in_loop, allow_impure) for _ in range(n)]

    def decl(self, scope: Scope):
        r = self.rng
        k = r.random()
        if k < 0.12:
            t = self.scalar_type()
            n = r.choice([4, 8, 16])
            name = self.fresh("a")
            scope.add("array", name, t, n)
            return Decl(name, t, None, count=n)
        if k < 0.22 and self.structs:
            st = r.choice(self.structs)
            name = self.fresh("s")
            scope.add("struct", name, st.name, None)
            return Decl(name, st.name, None)
        t = self.scalar_type()
        name = self.fresh("v")
        if k < 0.3 and is_int(t):
            v = r.choice(INT_LITS)
            scope.add("const", name, t, wrap(v, t))
            return Decl(name, t, Lit(v), const=True)
        if is_int(t) and r.random() < 0.3:      # an edge value: -1, 255, INT_MIN, ...
            init = Lit(r.choice(INT_LITS))
        else:
            init = self.value_for(scope, t, 3)
        scope.add("var", name, t, None)
        return Decl(name, t, init)

    def pair(self, scope: Scope):
        """`print(a OP b)` on two typed variables: every operator meets every type pair
        (promotion, signedness, widening), which nested random expressions reach rarely."""
        r = self.rng
        vs = [it for it in scope.all() if it[0] in ("var", "ro") and is_int(it[2])]
        if len(vs) < 2:
            return None
        (_, an, at, _), (_, bn, bt, _) = r.sample(vs, 2)
        a, b = Var(an, at), Var(bn, bt)
        op = r.choice(["+", "-", "*", "&", "|", "^"] + CMPS)
        return Print(Bin(op, a, b, "int32" if op in CMPS else arith(at, bt)))

    # ------------------------------------------------------------ top level
    def make_struct(self) -> Struct:
        fields = [(f"f{i}", self.scalar_type()) for i in range(self.rng.randint(1, 5))]
        arrays = [(f"a{i}", self.scalar_type(), self.rng.choice([2, 4]))
                  for i in range(self.rng.choice([0, 0, 1, 2]))]
        nested = [(f"n{i}", self.rng.choice(self.structs).name)
                  for i in range(self.rng.choice([0, 1]) if self.structs else 0)]
        st = Struct(self.prefix + self.fresh("S"), fields, arrays, nested)
        self.structs.append(st)
        return st

    def make_helper(self) -> None:
        r = self.rng
        name = self.prefix + self.fresh("h")
        scope = Scope(self.globals_ro)
        params, pure = [], True
        for i in range(r.randint(1, 12 if r.random() < 0.4 else 5)):
            pn = f"p{i}"
            k = r.random()
            if k < 0.1 and self.structs:
                st = r.choice(self.structs)
                params.append((pn, st.name))
                scope.add("struct", pn, st.name, None)
            elif k < 0.18 and self.structs:
                st = r.choice(self.structs)
                params.append((pn, st.name + "*"))
                scope.add("sptr", pn, st.name, None)
                pure = False
            elif k < 0.24:
                t = self.scalar_type()
                params.append((pn, t + "*"))
                scope.add("aptr", pn, t, 8)
            else:
                t = self.scalar_type()
                params.append((pn, t))
                scope.add("ro", pn, t, None)        # parameters are read-only here
        ret = self.scalar_type()
        body = [self.stmt(Scope(scope), 1, 0, False) for _ in range(r.randint(0, 4))]
        body.append(Return(self.value_for(scope, ret, 3)))
        self.helpers.append((Function(name, params, ret, body), pure))

    def all_members(self, base: str, sname: str) -> list:
        st = self.struct_named(sname)
        vals = [Field(base, fname, ft) for fname, ft in st.fields]
        vals += [FieldIndex(base, fname, Lit(i), n, ft)
                 for fname, ft, n in st.arrays for i in range(n)]
        for fname, inner in st.nested:
            vals += self.all_members(f"{base}.{fname}", inner)
        return vals

    def make_setter(self) -> None:
        """A void helper writing through pointers to scalars: `fn sN(p0: T*, ...) { *p0 = ..; }`
        (its arguments take the address of the caller's locals and globals)."""
        r = self.rng
        name = self.prefix + self.fresh("set")
        scope = Scope(self.globals_ro)
        params, outs = [], set()
        for i in range(r.randint(1, 6)):
            t = self.scalar_type()
            if i == 0 or r.random() < 0.4:
                params.append((f"p{i}", t + "*"))
                scope.add("optr", f"p{i}", t, None)
                outs.add(f"p{i}")
            else:
                params.append((f"p{i}", t))
                scope.add("ro", f"p{i}", t, None)
        body = [self.stmt(Scope(scope), 1, 0, False) for _ in range(r.randint(0, 2))]
        for pn in sorted(outs):
            t = dict(params)[pn][:-1]
            body.append(Assign(Deref(pn, t), self.value_for(scope, t, 3),
                               r.choice(["=", "="] + (["+=", "^="] if is_int(t) else []))))
        self.outs[name] = outs
        self.helpers.append((Function(name, params, "void", body), False))

    def make_struct_helper(self) -> None:
        """`fn mkN(...) -> S { var r: S; r.f = ...; return r; }`: a struct returned by value."""
        r = self.rng
        st = r.choice(self.structs)
        scope = Scope(self.globals_ro)
        params = []
        for i in range(r.randint(1, 4)):
            t = self.scalar_type()
            params.append((f"p{i}", t))
            scope.add("ro", f"p{i}", t, None)
        body = [Decl("r", st.name, None)]
        scope.add("struct", "r", st.name, None)
        for fname, ft in st.fields:
            if r.random() < 0.8:
                body.append(Assign(Field("r", fname, ft), self.value_for(scope, ft, 2)))
        body.append(Return(Var("r", st.name)))
        self.struct_helpers.append(Function(self.prefix + self.fresh("mk"), params, st.name,
                                            body))

    def make_recursive(self) -> None:
        r = self.rng
        name = self.prefix + self.fresh("rec")
        t = self.scalar_type(floats=False)
        scope = Scope()
        scope.add("ro", "d", "int32", None)
        scope.add("ro", "x", t, None)
        step = self.int_expr(scope, 2)
        fn = Function(name, [("d", "int32"), ("x", t)], t, [], recursive=True)
        fn.body = [If(Bin("<=", Var("d", "int32"), Lit(0), "int32"), [Return(Var("x", t))]),
                   Return(Bin(r.choice(["+", "^", "-"]),
                              Call(name, [Bin("-", Var("d", "int32"), Lit(1), "int32"),
                                          step], t),
                              Var("x", t), arith(t, t)))]
        self.helpers.append((fn, True))

    def program(self) -> Program:
        r = self.rng
        for _ in range(r.randint(0, 2)):
            self.make_struct()
        globals_ = []
        self.globals_ro = Scope()       # helpers read globals; only main writes them
        scope = Scope()
        for _ in range(r.randint(0, 3)):
            t = self.scalar_type()
            name = self.prefix + self.fresh("g")
            init = Lit(r.choice(FLOAT_LITS)) if is_float(t) else Lit(r.choice(INT_LITS))
            if is_float(t):
                init.float_as = t
            if r.random() < 0.25:           # a global array (zeroed, no initializer)
                n = r.choice([4, 8])
                globals_.append(Decl(name, t, None, count=n))
                self.globals_ro.add("roarray", name, t, n)
                scope.add("array", name, t, n)
                continue
            globals_.append(Decl(name, t, init))
            self.globals_ro.add("ro", name, t, None)
            scope.add("var", name, t, None)
        for _ in range(r.randint(1, 3 + self.size)):
            k = r.random()
            if k < 0.2:
                self.make_recursive()
            elif k < 0.35 and self.structs:
                self.make_struct_helper()
            elif k < 0.5:
                self.make_setter()
            else:
                self.make_helper()
        body = [self.decl(scope) for _ in range(r.randint(2, 5))]
        body += [self.stmt(scope, 2, 0, True) for _ in range(r.randint(4, 8 + 4 * self.size))]
        for kind, name, t, extra in scope.all():
            if kind in ("var", "const"):
                v = Var(name, t, extra if kind == "const" else None)
                body.append(Print(Call("f2i", [v], "int64") if is_float(t) else v))
            elif kind == "array":
                for i in range(min(extra, 4)):
                    v = Index(name, Lit(i), extra, t)
                    body.append(Print(Call("f2i", [v], "int64") if is_float(t) else v))
            elif kind == "struct":
                for v in self.all_members(name, t):
                    body.append(Print(Call("f2i", [v], "int64") if is_float(v.ty) else v))
        body.append(Return(Lit(0)))
        funcs = [f for f, _ in self.helpers] + self.struct_helpers + \
            [Function("main", [], "int32", body)]
        return Program(self.seed, list(self.structs), funcs, self.prefix, globals_)


def generate(seed: int, size: int = 1, prefix: str = "") -> Program:
    return Gen(seed, size, prefix).program()
