"""Random two-deep loop nests for the unroll-jam tests (matmul-shaped, in slot form).

`random_nest(seed)` builds `@f(%n: i32, %m: i32, %x: i64, %p: ptr<i64>) -> i64`: three
arrays A, B, C of 64 elements (i64 or f64, from malloc: distinct objects the pointer
facts know) filled from %p and %x, then

    for j in j0..bound { s = init(j); for k in k0..m' { s = s OP A[..k, j..] * B[..] };
                         store C[j..] = s (or into A or B: then the second copy's loads
                         may read what the first copy's store wrote: jamming must refuse) }

with random index arithmetic, bounds from the parameters or constants (some negative or
empty), an extra load before the inner loop, sometimes a longer inner body, and a
checksum of C (and A) returned, so every store is observable. The IV types are i32 or i64. The module's name ends in the
array the nest stores into (`nest7_intoA`).
"""
from __future__ import annotations

import random

from toolchain.compiler.ir import F64, I32, I64, Builder, Module, ptr
from toolchain.compiler.ir.types import IntType


def random_nest(seed: int) -> Module:
    r = random.Random(seed)
    m = Module(f"nest{seed}")
    b = Builder(m)
    malloc = b.extern_function("malloc", [("size", I64)], ptr(IntType(8, False)))
    fn = b.function("f", [("n", I32), ("m", I32), ("x", I64), ("p", ptr(I64))], I64)
    n, mm, x, p = fn.params
    b.position_at_end(b.append_block(fn, "entry"))
    et = r.choice([I64, F64])
    arrays = [b.bitcast(b.call(malloc, [b.const(I64, 64 * 8)]), ptr(et)) for _ in "ABC"]
    A, B, C = arrays

    def elem(v):
        return b.convert(v, et) if et != I64 else v

    def cell(arr, idx):             # arr[idx & 63], idx an i64
        return b.ptradd(arr, b.binop("and", idx, b.const(I64, 63)))

    def counted(name, iv_t, start, bound, body):
        """for (v = start; v < bound; v++) body(v) in slot form; returns nothing."""
        v = b.local(fn, iv_t, name)
        b.local_set(v, start)
        head, loop, done = (b.append_block(fn, f"{name}.{s}") for s in ("head", "body", "done"))
        b.br(head)
        b.position_at_end(head)
        b.cbr(b.cmp("lt", b.local_get(v), bound), loop, done)
        b.position_at_end(loop)
        body(b.local_get(v))
        b.local_set(v, b.add(b.local_get(v), b.const(iv_t, 1)))
        b.br(head)
        b.position_at_end(done)

    def fill(i):
        w = b.convert(i, I64)
        v = b.load(b.ptradd(p, b.binop("and", w, b.const(I64, 15))))
        b.store(cell(A, w), elem(b.add(b.mul(v, x), w)))
        b.store(cell(B, w), elem(b.sub(v, b.mul(w, b.const(I64, 3)))))
        b.store(cell(C, w), elem(b.const(I64, 0)))
    counted("i", I64, b.const(I64, 0), b.const(I64, 64), fill)

    jt, kt = r.choice([I32, I64]), r.choice([I32, I64])
    s = b.local(fn, et, "s")
    op = r.choice(["add", "mul", "sub"] + (["xor"] if et == I64 else []))
    a_stride, b_stride = r.choice([1, 3, 8, 64]), r.choice([1, 5, 16])
    target = r.choice([C, C, C, A, B])
    wide = r.random() < 0.4
    m.name = f"nest{seed}_into{'ABC'[arrays.index(target)]}"

    def inner(j):
        jw = b.convert(j, I64)

        def body(k):
            kw = b.convert(k, I64)
            va = b.load(cell(A, b.add(b.mul(kw, b.const(I64, a_stride)), jw)))
            vb = b.load(cell(B, b.add(b.mul(jw, b.const(I64, b_stride)), kw)))
            b.local_set(s, b.binop(op, b.local_get(s), b.mul(va, vb)))
            if wide:                # a longer inner body: jammed x2, not x4
                vc = b.load(cell(B, b.add(kw, b.const(I64, 11))))
                b.local_set(s, b.binop(op, b.local_get(s), b.add(vc, va)))
        first = b.load(cell(B, b.add(jw, b.const(I64, 7)))) if r.random() < 0.5 \
            else elem(b.const(I64, 1))
        b.local_set(s, first)
        bound = b.convert(mm, kt) if r.random() < 0.6 else b.const(kt, r.choice([0, 1, 5]))
        counted("k", kt, b.const(kt, r.choice([0, 0, 2])), bound, body)
        b.store(cell(target, b.add(jw, b.const(I64, r.choice([0, 9])))), b.local_get(s))
    bound = b.convert(n, jt) if r.random() < 0.7 else b.const(jt, r.choice([0, 3, 6, 8]))
    counted("j", jt, b.const(jt, r.choice([0, 0, 1, -2])), bound, inner)

    total = b.local(fn, I64, "total")
    b.local_set(total, b.const(I64, 0))

    def checksum(i):
        w = b.convert(i, I64)
        for arr in (C, A):
            v = b.load(cell(arr, w))
            v = b.bitcast(v, I64) if et == F64 else v
            b.local_set(total, b.add(b.mul(b.local_get(total), b.const(I64, 31)), v))
    counted("t", I64, b.const(I64, 0), b.const(I64, 64), checksum)
    b.ret(b.local_get(total))
    return m
