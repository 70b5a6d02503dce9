"""Random host-style IR programs for the optimizer's property tests.

`random_module(seed)` builds, through the public Builder and in the frontend's slot form
(or with `ssa=True` as SSA values, through the Builder's SSA construction),
one function `@f(%a: i32, %b: i32, %c: u32, %x: f32, %p: ptr<i64>) -> i64` made of
assignments to typed locals, if/else, counted loops (constant or `a & 7` bounds, nested
two deep, some with a second exit mid-body), calls of a small helper `@g`, loads and stores
through %p (16 cells) and a final store of every local into %p[16..], so all state is
observable in memory. Programs always terminate; a division may trap (the interpreter
reports it and the test skips that input).
"""
from __future__ import annotations

import random

from toolchain.compiler.ir import F32, F64, I32, I64, U32, Builder, Module, ptr
from toolchain.compiler.ir.ssa_builder import SSABuilder

TYPES = (I32, U32, I64, F32, F64)
INT_OPS = ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max", "div",
           "rem")
FLOAT_OPS = ("add", "sub", "mul", "min", "max")
PREDS = ("eq", "ne", "lt", "le", "gt", "ge")


class _Gen:
    def __init__(self, seed: int, ssa: bool = False):
        self.r = random.Random(seed)
        self.m = Module(f"rand{seed}")
        self.b = Builder(self.m)
        self.ssa = ssa
        self.fn = self.b.function("f", [("a", I32), ("b", I32), ("c", U32), ("x", F32),
                                        ("p", ptr(I64))], I64)
        self.helper = self._helper() if self.r.random() < 0.5 else None
        self.b.ssa = SSABuilder() if ssa else None
        self.b.position_at_end(self.b.append_block(self.fn, "entry"))
        self.vars = [self.b.local(self.fn, self.r.choice(TYPES), f"v{i}") for i in range(5)]
        self.budget = 40

    def _helper(self):
        """`g(u, v) = u < v ? u * 3 + v : v - u`, written with a local and a branch."""
        b = self.b
        g = b.function("g", [("u", I32), ("v", I32)], I32)
        b.ssa = SSABuilder() if self.ssa else None
        b.position_at_end(b.append_block(g, "entry"))
        u, v = g.params
        t = b.local(g, I32, "t")
        b.local_set(t, b.sub(v, u))
        then, join = b.append_block(g, "then"), b.append_block(g, "join")
        b.cbr(b.cmp("lt", u, v), then, join)
        b.position_at_end(then)
        b.local_set(t, b.add(b.mul(u, b.const(I32, 3)), v))
        b.br(join)
        b.position_at_end(join)
        b.ret(b.local_get(t))
        if b.ssa is not None:
            b.ssa.finish(g)
        return g

    def const(self, t):
        r = self.r
        if t.is_float:
            return self.b.const(t, r.choice([0.0, -0.0, 1.0, 0.5, -3.25, 1e30, 7.0, 1e-3]))
        return self.b.const(t, r.choice([0, 1, 2, 3, -1, 7, 31, 32, 100, -(1 << 31),
                                         (1 << 31) - 1, 12345]))

    def param(self, t):
        a, b, c, x = self.fn.params[:4]
        v = self.r.choice([a, b, c, x])
        return self.b.convert(v, t)

    def expr(self, t, depth=0):
        r, b = self.r, self.b
        k = r.random()
        if depth > 2 or k < 0.25:
            return r.choice([lambda: self.const(t), lambda: self.param(t),
                             lambda: self.get(t), lambda: self.get(t)])()
        if k < 0.75:
            ops = FLOAT_OPS if t.is_float else INT_OPS
            op = r.choice(ops)
            lhs, rhs = self.expr(t, depth + 1), self.expr(t, depth + 1)
            if op in ("div", "rem") and r.random() < 0.75:   # mostly nonzero divisors
                rhs = b.binop("or", rhs, b.const(t, 1))
            return b.binop(op, lhs, rhs)
        if k < 0.8 and t == I32 and self.helper is not None:
            return b.call(self.helper, [self.expr(I32, depth + 1), self.expr(I32, depth + 1)])
        if k < 0.87:
            return b.select(self.cond(depth + 1), self.expr(t, depth + 1),
                            self.expr(t, depth + 1))
        if k < 0.92 and not t.is_float:
            return b.unop(r.choice(["neg", "not"]), self.expr(t, depth + 1))
        return self.b.convert(self.expr(r.choice(TYPES), depth + 1), t)

    def get(self, t):
        v = self.r.choice(self.vars)
        return self.b.convert(self.b.local_get(v), t)

    def cond(self, depth=0):
        t = self.r.choice(TYPES)
        return self.b.cmp(self.r.choice(PREDS), self.expr(t, depth + 1),
                          self.expr(t, depth + 1))

    def cell(self):
        if self.r.random() < 0.3:       # constant cells: stores the pointer facts prove
            return self.b.ptradd(self.fn.params[4],        # disjoint from other loads
                                 self.b.const(I64, self.r.randint(0, 15)))
        i = self.b.binop("and", self.expr(I32, 2), self.b.const(I32, 15))
        return self.b.ptradd(self.fn.params[4], self.b.convert(i, I64))

    def stmts(self, depth: int, n: int):
        for _ in range(n):
            if self.budget <= 0 or self.b.terminated:
                return
            self.budget -= 1
            k = self.r.random()
            if k < 0.45:
                v = self.r.choice(self.vars)
                self.b.local_set(v, self.expr(v.type))
            elif k < 0.6 and depth < 3:
                self.if_(depth)
            elif k < 0.72 and depth < 2:
                self.loop(depth)
            elif k < 0.84:
                self.b.store(self.cell(), self.expr(I64))
            else:
                v = self.r.choice(self.vars)
                self.b.local_set(v, self.b.convert(self.b.load(self.cell()), v.type))

    def if_(self, depth):
        b, fn = self.b, self.fn
        then, other, join = (b.append_block(fn, n) for n in ("then", "else", "join"))
        b.cbr(self.cond(), then, other)
        for blk in (then, other):
            b.position_at_end(blk)
            self.stmts(depth + 1, self.r.randint(0, 3))
            if not b.terminated:
                b.br(join)
        b.position_at_end(join)

    def loop(self, depth):
        b, fn, r = self.b, self.fn, self.r
        i = b.local(fn, I32, "i")
        start = r.choice([0, 1, 3])
        b.local_set(i, b.const(I32, start))
        if r.random() < 0.5:
            bound = b.const(I32, r.randint(0, 6))
        else:
            bound = b.binop("and", self.fn.params[0], b.const(I32, 7))
        head, body, done = (b.append_block(fn, n) for n in ("loop", "body", "done"))
        if b.ssa is not None:
            b.ssa.defer_seal(head)                # the back edge comes after the body
        b.br(head)
        b.position_at_end(head)
        b.cbr(b.cmp("lt", b.local_get(i), bound), body, done)
        b.position_at_end(body)
        if r.random() < 0.3:                      # a second exit from the middle of the body
            rest = b.append_block(fn, "rest")
            b.cbr(self.cond(2), done, rest)
            b.position_at_end(rest)
        self.stmts(depth + 1, r.randint(1, 4))
        if not b.terminated:
            b.local_set(i, b.add(b.local_get(i), b.const(I32, r.choice([1, 1, 2]))))
            b.br(head)
        if b.ssa is not None:
            b.ssa.seal(head)
        b.position_at_end(done)


def _bits64(b, v):
    t = v.type
    if t == F32:
        return b.convert(b.bitcast(v, U32), I64)
    if t == F64:
        return b.bitcast(v, I64)
    return b.convert(v, I64)


def random_module(seed: int, ssa: bool = False) -> Module:
    g = _Gen(seed, ssa)
    b = g.b
    for v in g.vars:
        b.local_set(v, g.const(v.type))
    g.stmts(0, g.r.randint(3, 8))
    p = g.fn.params[4]
    for k, v in enumerate(g.vars):
        b.store(b.ptradd(p, b.const(I64, 16 + k)), _bits64(b, b.local_get(v)))
    b.ret(_bits64(b, b.local_get(g.vars[0])))
    if b.ssa is not None:
        b.ssa.finish(g.fn)
        b.ssa = None
    return g.m


INPUTS = ((0, 0, 0, 0.0), (5, -3, 7, 1.5), (7, 2, 4000000000, -2.75), (3, 100, 1, 1e20))
