"""Tiny IR-building helpers for the IR-layer tests."""
from toolchain.compiler.ir import Builder, Module, VOID, I32, U32, F32, ptr


def kernel(name="k", params=(("out", ptr(U32, "global")), ("n", I32))):
    m = Module("t")
    b = Builder(m)
    fn = b.function(name, list(params), VOID, kind="kernel")
    b.position_at_end(b.append_block(fn, "entry"))
    return m, b, fn


def if_then(b, fn, cond, body, name="then"):
    """Emit `if (cond) { body(b) }` and continue after it."""
    then, join = b.append_block(fn, name), b.append_block(fn, "join")
    b.cbr(cond, then, join)
    b.position_at_end(then)
    body(b)
    if not b.terminated:
        b.br(join)
    b.position_at_end(join)
