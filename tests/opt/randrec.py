"""Random self-recursive IR functions for the tail-recursion and inline-recursive tests.

`random_recursive(seed)` builds, in the frontend's slot form, `@r(%d: i32, %a: T, %b: T,
%p: ptr<i64>) -> T` (T one of i32, u32, i64, u8, or void), recursing on `d - 1` or `d - 2`
until `d <= 0`. Each arm of a few random branches ends in one of: a plain tail call, an
accumulating tail call `x OP r(...)` (either order; OP includes sub, which must stay a
call), two calls combined, a call whose result is stored and then changed, a store then a
tail call, or a plain return. Stores through %p (8 cells) make the order of effects
observable. A local is written before the branches, so slots flow through the recursion.
"""
from __future__ import annotations

import random

from toolchain.compiler.ir import I32, I64, U32, Builder, Module, ptr
from toolchain.compiler.ir.types import VOID, IntType

U8 = IntType(8, False)
RET_TYPES = (I32, U32, I64, U8, VOID)
OPS = ("add", "mul", "and", "or", "xor", "sub")


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.m = Module(f"rec{seed}")
        self.b = Builder(self.m)
        self.t = self.r.choice(RET_TYPES)
        self.vt = I64 if self.t == VOID else self.t           # the arguments' type
        self.fn = self.b.function("r", [("d", I32), ("a", self.vt), ("b", self.vt),
                                        ("p", ptr(I64))], self.t)
        self.b.position_at_end(self.b.append_block(self.fn, "entry"))
        self.v = self.b.local(self.fn, self.vt, "v")

    def leaf(self):
        r, b = self.r, self.b
        d, a, bb, _ = self.fn.params
        return r.choice([lambda: a, lambda: bb, lambda: b.local_get(self.v),
                         lambda: b.convert(d, self.vt),
                         lambda: b.const(self.vt, r.choice([0, 1, 2, 3, 7, 255, -1]))])()

    def expr(self, depth=0):
        if depth > 1 or self.r.random() < 0.4:
            return self.leaf()
        op = self.r.choice(("add", "sub", "mul", "xor", "and", "or"))
        return self.b.binop(op, self.expr(depth + 1), self.expr(depth + 1))

    def call(self, step=1):
        b = self.b
        d = b.binop("sub", self.fn.params[0], b.const(I32, step))
        return b.call(self.fn, [d, self.expr(), self.expr(), self.fn.params[3]])

    def store(self, v):
        b = self.b
        cell = b.binop("and", self.fn.params[0], b.const(I32, 7))
        b.store(b.ptradd(self.fn.params[3], b.convert(cell, I64)), b.convert(v, I64))

    def ret(self, v=None):
        if self.t == VOID:
            if v is not None:
                self.store(v)
            self.b.ret()
        else:
            self.b.ret(v)

    def arm(self):
        r, b = self.r, self.b
        k = r.random()
        if k < 0.2:
            c = self.call(r.choice([1, 2]))
            self.b.ret(c) if self.t != VOID else self.b.ret()
        elif k < 0.5 and self.t != VOID:
            x, c = self.expr(), self.call(r.choice([1, 2]))
            op = r.choice(OPS)
            b.ret(b.binop(op, x, c) if r.random() < 0.5 else b.binop(op, c, x))
        elif k < 0.62 and self.t != VOID:
            c1, c2 = self.call(1), self.call(2)
            b.ret(b.binop(r.choice(OPS), c1, c2))
        elif k < 0.75:
            c = self.call(1)
            if self.t == VOID:
                self.store(self.expr())
                b.ret()
            else:
                self.store(c)
                b.ret(b.binop("add", c, b.const(self.t, 1)))
        elif k < 0.9:
            self.store(self.expr())
            c = self.call(1)
            self.b.ret(c) if self.t != VOID else self.b.ret()
        else:
            self.ret(self.expr())


def random_recursive(seed: int) -> Module:
    g = _Gen(seed)
    b, fn = g.b, g.fn
    b.local_set(g.v, g.expr())
    base, rec = b.append_block(fn, "base"), b.append_block(fn, "rec")
    b.cbr(b.cmp("le", fn.params[0], b.const(I32, 0)), base, rec)
    b.position_at_end(base)
    g.ret(g.expr())
    b.position_at_end(rec)
    for _ in range(g.r.randint(0, 2)):
        then, other = b.append_block(fn, "arm"), b.append_block(fn, "next")
        b.cbr(b.cmp(g.r.choice(("lt", "eq", "ne")), g.expr(), g.expr()), then, other)
        b.position_at_end(then)
        g.arm()
        b.position_at_end(other)
    g.arm()
    return g.m
