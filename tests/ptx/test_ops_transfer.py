"""The typed constructors the replay, tensor-transfer and WMMA-staging lowerings build with
(targets/ptx/ops.py): each prints the PTX it names, with its destination and sources where
the printed text's parse-back puts them, and a bad modifier is refused."""
from __future__ import annotations

import pytest

from toolchain.compiler.targets.ptx import ops as I
from toolchain.compiler.targets.ptx.parse import parse_statement
from toolchain.compiler.targets.ptx.printer import format_instr

CASES = [
    (I.guarded(I.binary("or", "b32", "%r3", "%r1", 4194304), "%p1"),
     "@%p1 or.b32 %r3, %r1, 4194304;"),
    (I.guarded(I.bra("$L__x1"), "%p2", negated=True), "@!%p2 bra $L__x1;"),
    (I.setp_and("ge", "u32", "%p1", "%r2", 16, "%p1"), "setp.ge.and.u32 %p1, %r2, 16, %p1;"),
    (I.fma("f32", "%f1", "%f2", "%f3", "%f1"), "fma.rn.f32 %f1, %f2, %f3, %f1;"),
    (I.fma("f64", "%fd1", "%fd2", "%fd3", "%fd1", "rz"), "fma.rz.f64 %fd1, %fd2, %fd3, %fd1;"),
    (I.ld_vec(".global", "u32", I.vec("%r1", "%r2", "%r3", "%r4"), I.mem("%rd1")),
     "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];"),
    (I.ld_vec("", "u32", I.vec("%r1", "%r2"), I.mem("%rd1+8")), "ld.v2.u32 {%r1, %r2}, [%rd1+8];"),
    (I.cp_async("cg", I.mem("%r5"), I.mem("%rd2"), 16),
     "cp.async.cg.shared.global [%r5], [%rd2], 16;"),
    (I.cp_async_commit_group(), "cp.async.commit_group;"),
    (I.cp_async_wait_group(1), "cp.async.wait_group 1;"),
    (I.fence_mbarrier_init(), "fence.mbarrier_init.release.cluster;"),
    (I.fence_proxy_async_shared(), "fence.proxy.async.shared::cta;"),
    (I.cp_async_bulk_tensor_load("%r1", "%rd4", ["%r2", "%r3", "%r4"], "%r5"),
     "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
     "[%r1], [%rd4, {%r2, %r3, %r4}], [%r5];"),
    (I.cp_async_bulk_tensor_store("%rd4", ["%r2"], "%r1"),
     "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd4, {%r2}], [%r1];"),
    (I.cp_async_bulk_commit_group(), "cp.async.bulk.commit_group;"),
    (I.cp_async_bulk_wait_group(0), "cp.async.bulk.wait_group 0;"),
]


@pytest.mark.parametrize("ins, text", CASES, ids=[t.split(" ")[0] for _, t in CASES])
def test_prints_and_reads_back_the_same(ins, text):
    assert format_instr(ins) == "\t" + text
    back = parse_statement(text)
    assert (back.name, back.dsts, back.srcs, back.guard, back.negated) == \
        (ins.name, ins.dsts, ins.srcs, ins.guard, ins.negated)
    assert [type(o) for o in back.operands] == [type(o) for o in ins.operands]


@pytest.mark.parametrize("build", [
    lambda: I.setp_and("bigger", "u32", "%p1", "%r1", 0, "%p1"),
    lambda: I.fma("u32", "%r1", "%r2", "%r3", "%r1"),
    lambda: I.fma("f32", "%f1", "%f2", "%f3", "%f1", "sat"),
    lambda: I.cp_async("cs", I.mem("%r1"), I.mem("%rd1"), 16),
    lambda: I.ld_vec(".tex", "u32", I.vec("%r1", "%r2"), I.mem("%rd1")),
])
def test_bad_modifiers_are_refused(build):
    with pytest.raises(ValueError):
        build()
