"""FileCheck of how each IR op family lowers (signedness, widening, orders, fallbacks)."""
import re

from tests.support.filecheck import filecheck

from . import kernels as K
from .helpers import emit

R = "{{%r[0-9]+}}"
RS = "{{%rs[0-9]+}}"


def test_integer_signedness_and_8bit_widening():
    text = emit(K.build_arith())
    filecheck(text, f"""
CHECK: ld.global.s8 [[A:%rs[0-9]+]], [[[P:%rd[0-9]+]]];
CHECK-NEXT: ld.global.s8 [[B:%rs[0-9]+]], [[[P]]+1];
CHECK-NEXT: add.s16 [[S:%rs[0-9]+]], [[A]], [[B]];
CHECK-NEXT: cvt.s16.s8 [[S]], [[S]];
CHECK-NEXT: st.global.s8 [[[P]]+2], [[S]];
CHECK: div.s16
CHECK-NOT: cvt.s16.s8
CHECK: st.global.s8
CHECK: div.s32
CHECK: rem.s32
CHECK: shr.s32
CHECK: setp.lt.s32
CHECK: cvt.u32.u64 [[C:{R}]]
CHECK-NEXT: shl.b64 {{{{%rd[0-9]+}}}}, {{{{%rd[0-9]+}}}}, {R};
CHECK: ld.global.u8
CHECK: add.u16 [[R:{RS}]]
CHECK-NEXT: cvt.u16.u8
CHECK: setp.lo.u16
CHECK: div.u32
CHECK: rem.u32
CHECK: shr.u32
CHECK: setp.lo.u32
CHECK: setp.ls.u32
CHECK: setp.hi.u32
CHECK: setp.hs.u32
CHECK: div.rn.f32
CHECK: min.f32
CHECK: neg.f32
CHECK: setp.eq.f32 {{{{%p[0-9]+}}}}
CHECK-NEXT: selp.u16 {RS}, 1, 0,
CHECK-NEXT: st.global.u8
CHECK: setp.neu.f32
CHECK: setp.lt.f32
CHECK: div.rn.f64
CHECK: and.pred
CHECK: or.pred
CHECK: xor.pred
CHECK: not.pred
""".replace("[[R:" + RS + "]]", RS).replace("[[C:" + R + "]]", R))


def test_conversions():
    text = emit(K.build_casts())
    filecheck(text, """
CHECK-LABEL: .visible .entry casts(
CHECK-NEXT: .param .u8 casts_param_0,
CHECK-NEXT: .param .s8 casts_param_1,
CHECK-NEXT: .param .s16 casts_param_2,
CHECK-NEXT: .param .s32 casts_param_3,
CHECK-NEXT: .param .s64 casts_param_4,
CHECK-NEXT: .param .u8 casts_param_5,
CHECK-NEXT: .param .u16 casts_param_6,
CHECK-NEXT: .param .u32 casts_param_7,
CHECK-NEXT: .param .u64 casts_param_8,
CHECK-NEXT: .param .f32 casts_param_9,
CHECK-NEXT: .param .f64 casts_param_10,
CHECK: ld.param.u8 [[B:%rs[0-9]+]], [casts_param_0];
CHECK-NEXT: setp.ne.u16 [[Q:%p[0-9]+]], [[B]], 0;
CHECK: ld.param.f32 [[F:%f[0-9]+]], [casts_param_9];
CHECK: selp.f32 {{%f[0-9]+}}, 0f3F800000, 0f00000000, [[Q]];
CHECK: cvt.s32.s8
CHECK: cvt.u8.s8
CHECK: cvt.rn.f32.s16
CHECK: cvt.s8.s32
CHECK: cvt.s64.s32
CHECK: cvt.u64.u32
CHECK: setp.neu.f32 {{%p[0-9]+}}, [[F]], 0f00000000;
CHECK: cvt.rzi.s8.f32
CHECK: cvt.rzi.s32.f32
CHECK: cvt.rzi.u64.f32
CHECK: cvt.f64.f32
CHECK: cvt.rn.f32.f64
CHECK: mov.b32 {{%r[0-9]+}}, [[F]];
CHECK: mov.b32 {{%f[0-9]+}}, {{%r[0-9]+}};
CHECK: cvta.to.global.u64
CHECK: cvta.global.u64
CHECK: ld.f32
CHECK: cvt.u32.u64
""")
    # i32 <-> u32 and i64 <-> u64 are the same register bits: no instruction at all
    assert "cvt.u32.s32" not in text and "cvt.s32.u32" not in text
    assert "cvt.u64.s64" not in text


def test_control_flow_falls_through_and_keeps_locals_in_registers():
    text = emit(K.build_control())
    filecheck(text, """
CHECK: ld.param.s32 [[N:%r[0-9]+]], [control_param_1];
CHECK: $L__BB1:	// outer
CHECK-NEXT: setp.ge.s32 [[P:%p[0-9]+]], [[I:%r[0-9]+]], [[N]];
CHECK-NEXT: @[[P]] bra $L__BB9;
CHECK-NEXT: $L__BB2:	// outer_body
CHECK: rem.s32
CHECK: setp.ne.s32
CHECK: @{{%p[0-9]+}} bra $L__BB7;
CHECK: setp.eq.s32 {{%p[0-9]+}}, [[I]], [[J:%r[0-9]+]];
CHECK: mul.lo.s32 {{%r[0-9]+}}, [[I]], [[J]];
CHECK: bra.uni $L__BB3;
CHECK: bra.uni $L__BB1;
CHECK: $L__BB9:	// done
CHECK: selp.b32
""")
    # local.get reads the local's own register: the only movs are the local.sets
    movs = re.findall(r"\tmov\.b32 (%r\d+), ", text)
    assert len(movs) == 6 and set(movs) <= {"%r3", "%r4", "%r5"}


def test_atomics_orders_scopes_spaces():
    text = emit(K.build_atomics())
    filecheck(text, """
CHECK: .shared .align 32 .b8 atomics_counters[256];
CHECK: ld.param.u64 [[G:%rd[0-9]+]], [atomics_param_0];
CHECK: mov.u64 [[W:%rd[0-9]+]], atomics_counters;
CHECK: ld.relaxed.cta.global.u32
CHECK: ld.acquire.cta.global.u32
CHECK: fence.sc.cta;
CHECK-NEXT: ld.acquire.cta.global.u32
CHECK: st.relaxed.cta.global.u32 [[[G]]], 1;
CHECK: st.release.cta.global.u32
CHECK: fence.sc.cta;
CHECK-NEXT: st.relaxed.cta.global.u32
CHECK: atom.relaxed.cta.global.add.u32 {{%r[0-9]+}}, [[[G]]], 1;
CHECK-NEXT: atom.relaxed.cta.global.add.u32 {{%r[0-9]+}}, [[[G]]], 4294967295;
CHECK-NEXT: atom.relaxed.cta.global.min.u32
CHECK-NEXT: atom.relaxed.cta.global.max.u32
CHECK-NEXT: atom.relaxed.cta.global.and.b32
CHECK-NEXT: atom.relaxed.cta.global.or.b32
CHECK-NEXT: atom.relaxed.cta.global.xor.b32
CHECK-NEXT: atom.relaxed.cta.global.exch.b32
CHECK: atom.release.cta.global.add.u32
CHECK: atom.acq_rel.cta.global.add.u32
CHECK: fence.sc.cta;
CHECK-NEXT: atom.acquire.cta.global.add.u32
CHECK: atom.acq_rel.cta.global.cas.b32 {{%r[0-9]+}}, [[[G]]], 1, 2;
CHECK: fence.sc.cta;
CHECK-NEXT: atom.acquire.cta.global.cas.b32
CHECK: atom.release.cta.global.cas.b32
CHECK: ld.acquire.gpu.global.u32
CHECK: ld.acquire.sys.global.u32
CHECK: ld.relaxed.cta.global.u64
CHECK: atom.relaxed.gpu.global.min.u64
CHECK: ld.relaxed.cta.shared.u32 {{%r[0-9]+}}, [[[W]]];
CHECK: atom.acq_rel.cta.shared.add.u32
CHECK: cvta.to.global.u64
CHECK: ld.relaxed.cta.global.u32
""")
    assert ".shared.u64" not in text and "atom.relaxed.gpu.shared" not in text


def test_arrays_dynamic_shared_and_barriers():
    filecheck(emit(K.build_arrays()), """
CHECK: .shared .align 32 .b8 arrays_tile[1024];
CHECK-NEXT: .extern .shared .align 16 .b8 arrays_dyn[];
CHECK-LABEL: .visible .entry arrays(
CHECK: .local .align 16 .b8 __local_depot1[16];
CHECK-NOT: __local_depot2
CHECK: mov.u64 {{%rd[0-9]+}}, arrays_tile;
CHECK: mov.u64 {{%rd[0-9]+}}, __local_depot1;
CHECK: mov.u64 [[D:%rd[0-9]+]], arrays_dyn;
CHECK: mov.u64 {{%rd[0-9]+}}, arrays_dyn;
CHECK: st.shared.f32
CHECK: st.local.s32
CHECK: st.shared.u32
CHECK: bar.sync 0;
CHECK-NOT: membar
CHECK: ld.shared.f32
CHECK: ld.local.s32
CHECK: bar.sync 0;
CHECK: mov.b32 [[S:%r[0-9]+]], [[V:%f[0-9]+]];
CHECK: mov.b32 {{%f[0-9]+}}, [[S]];
CHECK: st.global.f32
""".replace("[[D:%rd[0-9]+]]", "{{%rd[0-9]+}}"))


def test_async_copy_native_and_replay():
    native = emit(K.build_async(), "sm_90a")
    filecheck(native, """
CHECK: cp.async.cg.shared.global [{{%rd[0-9]+}}], [{{%rd[0-9]+}}], 16;
CHECK-NEXT: cp.async.commit_group;
CHECK: cvta.to.global.u64
CHECK-NEXT: cp.async.ca.shared.global [{{%rd[0-9]+}}], [{{%rd[0-9]+}}], 8;
CHECK-NEXT: cp.async.commit_group;
CHECK-NEXT: cp.async.wait_group 1;
CHECK-NEXT: cp.async.wait_group 0;
CHECK-NEXT: bar.sync 0;
""")
    replay = emit(K.build_async(), "portable")
    assert "cp.async" not in replay
    filecheck(replay, """
CHECK: ld.global.u32 [[A:%r[0-9]+]], [[[S:%rd[0-9]+]]];
CHECK-NEXT: st.shared.u32
CHECK-NEXT: ld.global.u32 {{%r[0-9]+}}, [{{%rd[0-9]+}}+4];
CHECK-NEXT: st.shared.u32 [{{%rd[0-9]+}}+4],
CHECK: ld.global.u32 {{%r[0-9]+}}, [{{%rd[0-9]+}}+12];
CHECK-NEXT: st.shared.u32 [{{%rd[0-9]+}}+12],
CHECK: cvta.to.global.u64
CHECK-NEXT: ld.global.u32
CHECK-NEXT: st.shared.u32
CHECK-NEXT: ld.global.u32
CHECK-NEXT: st.shared.u32
CHECK-NEXT: bar.sync 0;
""".replace("[[A:%r[0-9]+]]", "{{%r[0-9]+}}").replace("[[[S:%rd[0-9]+]]]",
                                                        "[{{%rd[0-9]+}}]"))
    # ISA 7.0 on sm_80 is the first native profile
    assert "cp.async" in emit(K.build_async(), "sm_80", "7.0")
    assert "cp.async" not in emit(K.build_async(), "sm_75", "8.8")


def test_subgroup_collectives():
    # a 96-thread block runs whole warps: subgroup_size() is the constant (issue 18)
    filecheck(emit(K.build_subgroup()), "CHECK: st.global.u32 [{{%rd[0-9]+}}+160], 32;")
    gb10 = emit(K.build_subgroup(block=(48, 1, 1)))   # a partial second warp
    filecheck(gb10, """
CHECK: mov.u32 [[LANE:%r[0-9]+]], %laneid;
CHECK: mov.u32 {{%r[0-9]+}}, %ntid.z;
CHECK: and.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, -32;
CHECK: min.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 32;
CHECK: activemask.b32 [[M:%r[0-9]+]];
CHECK-NEXT: shfl.sync.idx.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 3, 31, {{%r[0-9]+}};
CHECK: shfl.sync.idx.b32
CHECK-NEXT: shr.b32
CHECK-NEXT: and.b32
CHECK-NEXT: setp.ne.u32
CHECK-NEXT: selp.b32
CHECK: redux.sync.add.u32
CHECK: redux.sync.min.u32
CHECK: redux.sync.max.u32
CHECK: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 0,
CHECK: shfl.sync.up.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 16, 0,
CHECK: shfl.sync.down.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 31,
CHECK-NEXT: and.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 65536;
CHECK-NEXT: setp.ne.u32
CHECK-NEXT: @{{%p[0-9]+}} add.rn.f32
CHECK: bfind.u32
CHECK: @{{%p[0-9]+}} min.f32
CHECK: @{{%p[0-9]+}} max.f32
CHECK: selp.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, 0f00000000,
CHECK: vote.sync.ballot.b32
CHECK: mov.u32 {{%r[0-9]+}}, 0;
CHECK: vote.sync.ballot.b32
CHECK: setp.eq.u32
CHECK: vote.sync.any.pred
CHECK: vote.sync.all.pred
""".replace("[[M:%r[0-9]+]]", "{{%r[0-9]+}}"))
    portable = emit(K.build_subgroup(), "portable")
    assert "redux.sync" not in portable
    assert portable.count("shfl.sync.down.b32") == 5 * 6     # 3 u32 + 3 f32 trees


def test_packed_half_bf16_dp4a_vectors():
    text = emit(K.build_packed())
    filecheck(text, """
CHECK: ld.param.u64 [[X:%rd[0-9]+]], [packed_param_0];
CHECK-NEXT: ld.param.u64 [[V:%rd[0-9]+]], [packed_param_1];
CHECK: ld.global.u16 [[H:%rs[0-9]+]], [[[X]]];
CHECK: cvt.f32.f16 {{%f[0-9]+}}, [[H]];
CHECK: cvt.rn.f16.f32
CHECK: cvt.u32.u16
CHECK-NEXT: shl.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 16;
CHECK-NEXT: mov.b32 {{%f[0-9]+}},
CHECK: cvt.rn.bf16.f32
CHECK: dp4a.u32.u32
CHECK: dp4a.s32.s32
CHECK: dp2a.hi.s32.s32
CHECK: dp2a.lo.u32.u32
CHECK: prmt.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, 12816;
CHECK: add.rn.f16x2
CHECK: mul.rn.f16x2
CHECK: fma.rn.f16x2
CHECK: mov.b32 {{{%rs[0-9]+}}, {{%rs[0-9]+}}}, {{%r[0-9]+}};
CHECK: cvt.rn.f16.f32
CHECK-NEXT: cvt.rn.f16.f32
CHECK-NEXT: mov.b32 {{%r[0-9]+}}, {{{%rs[0-9]+}}, {{%rs[0-9]+}}};
CHECK: ld.global.v4.f32 {{{%f[0-9]+}}, {{%f[0-9]+}}, {{%f[0-9]+}}, {{%f[0-9]+}}}, [[[V]]+64];
CHECK: st.local.f32 [{{%rd[0-9]+}}+12],
CHECK: ld.local.f32
CHECK: st.global.v4.f32 [[[V]]+128],
""")
    portable = emit(K.build_packed(), "portable")
    assert "bf16" not in portable
    filecheck(portable, """
CHECK: bfe.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 16, 1;
CHECK-NEXT: add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 32767;
CHECK: setp.nan.f32
CHECK-NEXT: selp.b32 {{%r[0-9]+}}, 32704,
""")


def test_debug_print_and_assert():
    checked = emit(K.build_debug(), gpu_checks=True)
    filecheck(checked, """
CHECK: .extern .func (.param .b32 func_retval0) vprintf
CHECK: .global .align 1 .b8 _str_0[16] = {110, 61, 37, 100,
CHECK: .local .align 8 .b8 __local_depot1[24];
CHECK: ld.param.s32 [[N:%r[0-9]+]], [debug_param_1];
CHECK: cvta.global.u64
CHECK: st.local.s32 [__local_depot1], [[N]];
CHECK: cvt.f64.f32
CHECK-NEXT: st.local.f64 [__local_depot1+8],
CHECK: cvt.s32.s8
CHECK-NEXT: st.local.s32 [__local_depot1+16],
CHECK: cvta.local.u64
CHECK: call.uni (retval0), vprintf, (param0, param1);
CHECK: mov.u64 {{%rd[0-9]+}}, 0;
CHECK: call.uni (retval0), vprintf, (param0, param1);
CHECK: @!{{%p[0-9]+}} trap;
CHECK: setp.eq.s32
CHECK-NEXT: @{{%p[0-9]+}} trap;
""")
    assert "trap" not in emit(K.build_debug())


def test_value_used_in_a_block_emitted_before_its_definition(ptxas):
    """After -O moves code, a block listed earlier may use a value defined in a later-listed
    block that dominates it: the use gets the value's register ahead of time and the
    definition writes that register."""
    m, b, f = K.start("fwd", [("x", K.g(K.F32))], (32, 1, 1))
    uses, defs = b.append_block(f, "uses"), b.append_block(f, "defs")
    b.br(defs)
    b.position_at_end(defs)
    v = b.add(b.load(f.params[0]), b.const(K.F32, 1.0))
    b.br(uses)
    b.position_at_end(uses)
    b.store(f.params[0], v)
    b.ret()
    text = emit(m, "sm_90a")
    stored = re.search(r"// uses\n\tst\.global\.f32 \[%rd\d+\], (%f\d+);", text)
    assert stored, text
    assert re.search(r"// defs\n(.*\n)*\tadd\.f32 " + re.escape(stored.group(1)) + ", ",
                     text), text
    ptxas(text, "sm_90a")
