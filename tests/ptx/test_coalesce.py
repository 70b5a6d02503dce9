"""Copy coalescing around wgmma accumulators (targets/ptx/coalesce.py): the loop-carried
accumulator, its loop-head copy and the wgmma D vector become one register, and nothing
is merged where the values differ, where a wgmma still writes or reads asynchronously, or
under a guard."""
from __future__ import annotations

from toolchain.compiler.targets.ptx import coalesce
from toolchain.compiler.targets.ptx.parse import parse_statement
from toolchain.compiler.targets.ptx.printer import format_instr

WGMMA = ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f4, %f5, %f6, %f7}, "
         "{%r1, %r2, %r3, %r4}, %rd1, %p1, 1, 1, 1")
GROUP = ("wgmma.fence.sync.aligned", WGMMA, "wgmma.commit_group.sync.aligned",
         "wgmma.wait_group.sync.aligned 0")


def _body(*lines):
    return [parse_statement(s) for s in lines]


def _text(body):
    return [format_instr(i).strip() for i in body]


def _loop(after_set=()):
    """acc = 0; while (...) { acc = P·V + acc * alpha } as out-of-SSA leaves it: the slot
    %f1, the loop-head copy %f2, the product %f3 copied into D's %f4."""
    return _body("mov.f32 %f1, 0f00000000", "mov.f32 %f5, 0f00000000",
                 "mov.f32 %f6, 0f00000000", "mov.f32 %f7, 0f00000000",
                 "$L__BB1:", "mov.f32 %f2, %f1", "setp.ge.u32 %p2, %r9, %r10",
                 "@%p2 bra $L__BB2", "mul.rn.f32 %f3, %f2, %f9", "mov.f32 %f4, %f3",
                 *GROUP, "mov.f32 %f1, %f4", *after_set, "add.u32 %r9, %r9, 1",
                 "bra.uni $L__BB1", "$L__BB2:", "st.global.f32 [%rd2], %f2", "ret")


def test_the_loop_carried_accumulator_is_the_d_register():
    out = _text(coalesce.run(_loop()))
    assert not [x for x in out if x.startswith("mov.f32 %f") and "0f" not in x], out
    assert "mul.rn.f32 %f4, %f4, %f9;" in out
    assert "st.global.f32 [%rd2], %f4;" in out
    assert "mov.f32 %f4, 0f00000000;" in out


def test_a_value_still_needed_after_the_slot_changes_keeps_its_copy():
    # the loop-head value %f2 is read after the back edge's set: it must not become %f1
    out = _text(coalesce.run(_loop(after_set=("st.global.f32 [%rd3], %f2",))))
    assert "mov.f32 %f2, %f1;" in out or "mov.f32 %f2, %f4;" in out, out
    assert "st.global.f32 [%rd3], %f2;" in out


def test_no_register_is_written_onto_a_d_register_in_flight():
    # %f8 is written between the wgmma and the wait that retires it; merging it with
    # %f4 (dead after the wgmma but written by it asynchronously) would race the wgmma
    body = _body("mov.f32 %f4, 0f00000000", "mov.f32 %f5, 0f00000000",
                 "mov.f32 %f6, 0f00000000", "mov.f32 %f7, 0f00000000",
                 "wgmma.fence.sync.aligned", WGMMA, "wgmma.commit_group.sync.aligned",
                 "mov.f32 %f8, %f20", "wgmma.wait_group.sync.aligned 0",
                 "st.global.f32 [%rd2], %f5", "mov.f32 %f4, %f8",
                 "st.global.f32 [%rd2], %f4", "ret")
    out = _text(coalesce.run(body))
    assert "mov.f32 %f8, %f20;" in out and "mov.f32 %f4, %f8;" in out, out


def test_a_wgmma_left_in_flight_past_its_block_is_left_alone():
    body = _body("$L__BB1:", "mov.f32 %f2, %f1", "mov.f32 %f4, %f2",
                 "wgmma.fence.sync.aligned", WGMMA, "wgmma.commit_group.sync.aligned",
                 "$L__BB2:", "wgmma.wait_group.sync.aligned 0", "mov.f32 %f1, %f4",
                 "bra.uni $L__BB1")
    assert _text(coalesce.run(body)) == _text(body)


def test_guarded_copies_and_other_classes_stay():
    body = _body("mov.f32 %f5, 0f00000000", "mov.f32 %f6, 0f00000000",
                 "mov.f32 %f7, 0f00000000", "@%p3 mov.f32 %f4, %f3",
                 "mov.b32 %r1, %r7", *GROUP, "st.global.f32 [%rd2], %f4", "ret")
    out = _text(coalesce.run(body))
    assert "@%p3 mov.f32 %f4, %f3;" in out and "mov.b32 %r1, %r7;" in out


def test_functions_without_wgmma_are_returned_as_they_are():
    body = _body("$L__BB1:", "mov.f32 %f2, %f1", "add.f32 %f1, %f2, %f3",
                 "bra.uni $L__BB1")
    assert coalesce.run(body) is body
