"""Cause 2 of issue 18: `subgroup_size()` is the immediate 32 where every launch runs whole
subgroups (declared block volume a multiple of 32, `per = warp` included, and helpers
reachable only from such kernels); elsewhere the exact partial-subgroup computation stays."""
from __future__ import annotations

import re

from toolchain.compiler.ir import I64, U32, VOID, Builder, Module, ptr

from .helpers import emit
from .source import ptx_of

COMPUTED = "min.u32"                 # the tail of the partial-warp computation


def _kernel(head: str) -> str:
    return f"""
{head} k(out: uint32*) {{
  out[thread.x] = subgroup_size();
}}
"""


def test_full_block_shapes_get_the_constant(ptxas):
    for head in ("kernel(block = 128)", "kernel(block = (8, 4, 2))",
                 "kernel(block = 64, per = warp)"):
        text = ptx_of(_kernel(head))
        assert COMPUTED not in text and "%ntid" not in text, head
        assert ", 32;" in text, head
        ptxas(text, "sm_90a")


def test_partial_or_unknown_shapes_keep_the_exact_computation(ptxas):
    for head in ("kernel", "kernel(block = 48)", "kernel(block = (3, 5, 1))"):
        text = ptx_of(_kernel(head))
        assert COMPUTED in text and "%ntid.z" in text, head
        ptxas(text, "sm_90a")


def _helpers_module():
    """Two helpers returning subgroup_size() (built through the IR builder: the language
    allows the call only inside kernels, but IR from other frontends may do this): `width`
    is reached from a full and a shapeless kernel, `width_only_full` from the full one."""
    m = Module("helpers")
    b = Builder(m)
    helpers = {}
    for name in ("width", "width_only_full"):
        f = b.function(name, [], U32)
        b.position_at_end(b.append_block(f, "entry"))
        b.ret(b.subgroup("size", U32))
        helpers[name] = f
    for name, shape, calls in (("full", (256, 1, 1), ("width", "width_only_full")),
                               ("unknown", None, ("width",))):
        k = b.function(name, [("out", ptr(U32, "global"))], VOID, kind="kernel",
                       block_shape=shape)
        b.position_at_end(b.append_block(k, "entry"))
        for i, callee in enumerate(calls):
            b.store(b.ptradd(k.params[0], b.const(I64, i)), b.call(helpers[callee], []))
        b.ret()
    return m


def _function(text: str, name: str) -> str:
    start = text.index(f" {name}()")
    return text[start:text.index("\n}\n", start)]


def test_helpers_follow_every_kernel_that_reaches_them(ptxas):
    text = emit(_helpers_module(), "sm_90a")
    assert COMPUTED in _function(text, "width")
    only_full = _function(text, "width_only_full")
    assert COMPUTED not in only_full and "%ntid" not in only_full
    assert re.search(r"mov\.b32 %r\d+, 32;", only_full)      # st.param needs a register
    ptxas(text, "sm_90a")


def test_a_strided_loop_gets_an_immediate_stride():
    text = ptx_of("""
kernel(block = 128) rows(x: float32*, n: int32) {
  for (var c: int32 = (int32)subgroup_local_id(); c < n; c += (int32)subgroup_size()) {
    x[c] = 0.0;
  }
}
""")
    assert COMPUTED not in text and "activemask" not in text
    assert any(line.strip().startswith("add.s32") and line.rstrip().endswith(", 32;")
               for line in text.splitlines())
