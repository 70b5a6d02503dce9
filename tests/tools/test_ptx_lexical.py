"""Lexical PTX view: function discovery and instruction classes."""
from __future__ import annotations

from tests.tools.variant_tool_helpers import DATA
from tools.gpu import ptx_lexical as lex

SAMPLE = """
.version 8.0
.target sm_90a
.address_size 64
.extern .func (.param .b32 r) proto(.param .b32 a);   // a prototype, no body
/* .entry commented_out() { ret; } */
.visible .entry k(.param .u64 p)
{
  .reg .pred %p<2>; .reg .f32 %f<3>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  ld.global.nc.v4.f32 {%f1, %f2, %f1, %f2}, [%rd1];
  @%p1 bra L1;
  { .reg .b32 %t; st.shared::cta.b32 [%rd1], %t; }
L1: st.global.f32 [%rd1], %f1;   // labelled statement
  bar.sync 0;
  fma.rn.f32 %f1, %f1, %f2, %f2;
  ret;
}
.func (.param .b32 r) helper(.param .b32 a) { .reg .b32 %r; ld.param.b32 %r, [a]; ret; }
"""


def test_finds_definitions_but_not_prototypes_or_comments():
    fns = lex.split_functions(SAMPLE)
    assert [(f.name, f.kind) for f in fns] == [("k", "entry"), ("helper", "func")]


def test_counts_classes_including_guarded_labelled_and_nested_statements():
    k = lex.split_functions(SAMPLE)[0]
    counts = lex.class_counts(k)
    assert counts == {"param_load": 1, "global_load": 1, "control": 2, "shared_store": 1,
                      "global_store": 1, "barrier": 1, "alu": 1}
    assert lex.global_memory_instructions(counts) == 2
    assert sum(counts.values()) == len(k.statements)


def test_state_space_qualifiers_and_dotted_refinements():
    cases = {"ld.volatile.global.f32": "global_load", "ld.f32": "generic_load",
             "st.local.u32": "local_store", "red.global.add.f32": "atomic",
             "cp.async.bulk.tensor.2d.shared::cluster.global": "bulk_copy",
             "cp.async.ca.shared.global": "async_copy", "retx": "alu", "ret": "control",
             "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16": "tensor"}
    assert {op: lex.classify(op) for op in cases} == cases


def test_vector_variant_has_fewer_loop_loads_than_it_has_total_global_ops():
    vec4 = lex.split_functions((DATA / "saxpy_vec4.ptx").read_text())[0]
    ops = [lex.opcode(s) for s in vec4.statements]
    assert ops.count("ld.global.nc.v4.f32") == 2 and ops.count("st.global.v4.f32") == 1
    assert lex.global_memory_instructions(lex.class_counts(vec4)) == 6   # + scalar tail


def test_unbalanced_body_is_reported():
    try:
        lex.split_functions(".entry k() { ret;")
    except ValueError as exc:
        assert "unbalanced" in str(exc)
    else:
        raise AssertionError("expected ValueError")
