"""Structural properties of emitted modules, checked on the decoded instructions (not text):
free branching, capabilities exactly as used, entry points and their interfaces, helpers,
exact barrier/atomic Scope and semantics operands, the hidden dynamic-arena parameter,
determinism and speed. Every module emitted here also passes spirv-val."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.spirv_emit import barriers as B
from tests.spirv_emit import irkernels as K
from tests.support.spirv import validate
from toolchain.compiler.ir import I32, I64, U16, U32, U64, VOID, Builder, Module, ptr
from toolchain.compiler.targets.spirv import emit_spirv
from toolchain.compiler.targets.spirv.disasm import decode

REPO = Path(__file__).resolve().parents[2]


def emit(module, env="opencl2.0", **kw):
    spv = emit_spirv(module, **kw)
    validate(spv, env)
    return decode(spv)[1]


def ops(instrs, name):
    return [i for i in instrs if i.opname == name]


def caps(instrs):
    return {i.operands[0] for i in ops(instrs, "OpCapability")}


def consts(instrs):
    return {i.result: i.operands[1] for i in ops(instrs, "OpConstant")}


def test_vadd_is_free_branching_with_minimal_capabilities():
    instrs = emit(K.vadd_module())
    assert not ops(instrs, "OpSelectionMerge") and not ops(instrs, "OpLoopMerge")
    assert ops(instrs, "OpBranchConditional")
    assert caps(instrs) == {"Addresses", "Kernel", "Int64"}
    (mm,) = ops(instrs, "OpMemoryModel")
    assert mm.operands == ["Physical64", "OpenCL"]


@pytest.mark.parametrize("make, present, absent", [
    (K.index3d_module, {"Int8"}, {"Int16", "Float64", "GenericPointer", "Groups"}),
    (K.intrinsics_module, {"Int16", "Float16Buffer", "Float64"}, {"Float16", "Int8"}),
    (K.subgroup_module, {"Groups", "SubgroupBallotKHR", "SubgroupVoteKHR"},
     {"Int64Atomics", "GenericPointer"}),
    (K.atomics_module, set(), {"Int64Atomics", "Float64", "Int8", "Int16"}),
    (B.generic_module, {"GenericPointer"}, {"Int64Atomics"}),
    (B.barriers_module, set(), {"Int64", "Int8", "Groups"}),
])
def test_capabilities_only_as_used(make, present, absent):
    got = caps(emit(make()))
    assert present <= got and not absent & got, got


def test_core_subgroup_spelling_needs_no_khr_extension():
    instrs = emit(K.subgroup_module(), subgroup_ops="core")
    assert not ops(instrs, "OpExtension")
    assert not {"SubgroupBallotKHR", "SubgroupVoteKHR"} & caps(instrs)
    khr = emit(K.subgroup_module())
    assert {i.operands[0] for i in ops(khr, "OpExtension")} == {
        "SPV_KHR_shader_ballot", "SPV_KHR_subgroup_vote"}


def test_u64_atomics_declare_int64atomics_valid_only_under_spv10():
    """Int64Atomics: spirv-val accepts it only with --target-env spv1.0 (LANGUAGE.md §12.6)."""
    instrs = emit(K.atomics_module(U64), env="spv1.0")
    assert "Int64Atomics" in caps(instrs)


def _two_kernel_module() -> Module:
    m = K.saxpy_module()
    b = Builder(m)
    fn = b.function("fill", [("out", ptr(I32, "global"))], VOID, kind="kernel",
                    block_shape=(32, 2, 1))
    b.position_at_end(b.append_block(fn, "entry"))
    y = b.convert(b.gpu_index("thread", "y"), I32)
    b.store(b.ptradd(fn.params[0], b.convert(y, I64)), b.convert(b.gpu_index(
        "grid_dim", "z"), I32))
    b.ret()
    return m


def test_entry_points_interfaces_helpers_and_local_size():
    instrs = emit(_two_kernel_module())
    names = {i.operands[0].value: i.operands[1] for i in ops(instrs, "OpName")}
    builtins = {i.operands[0].value: i.operands[2] for i in ops(instrs, "OpDecorate")
                if i.operands[1] == "BuiltIn"}
    eps = {i.operands[2]: i for i in ops(instrs, "OpEntryPoint")}
    assert set(eps) == {"saxpy", "fill"}
    assert all(e.operands[0] == "Kernel" for e in eps.values())
    iface = {k: {builtins[v.value] for v in e.operands[3:]} for k, e in eps.items()}
    assert iface["saxpy"] == {"WorkgroupId", "WorkgroupSize", "LocalInvocationId"}
    assert iface["fill"] == {"LocalInvocationId", "NumWorkgroups"}
    fn_names = {names[i.result] for i in ops(instrs, "OpFunction")}
    assert fn_names == {"axpy", "saxpy", "fill"}        # host_only is not emitted
    assert len(ops(instrs, "OpFunctionCall")) == 1
    (mode,) = ops(instrs, "OpExecutionMode")
    assert mode.operands[0].value == eps["fill"].operands[1].value
    assert mode.operands[1:] == ["LocalSize", 32, 2, 1]


ORDER_BITS = {"relaxed": 0, "acquire": 2, "release": 4, "acq_rel": 8, "seq_cst": 16}


@pytest.mark.parametrize("regions, order", B.BARRIER_FORMS + [(("global",), "seq_cst")])
def test_barrier_scope_and_exact_semantics(regions, order):
    instrs = emit(B.barriers_module([(regions, order)]))
    (bar,) = ops(instrs, "OpControlBarrier")
    c = consts(instrs)
    execution, memory, sem = (c[o.value] for o in bar.operands)
    assert (execution, memory) == (2, 2)                 # Workgroup, Workgroup
    want = ORDER_BITS[order] | (0x100 if "workgroup" in regions else 0) | \
        (0x200 if "global" in regions else 0)
    assert sem == want


SCOPES = {"work_item": 4, "subgroup": 3, "workgroup": 2, "device": 1, "system": 0}


@pytest.mark.parametrize("kind, order, scope, space", [
    ("load", "acquire", "device", "global"), ("store", "release", "system", "global"),
    ("add", "relaxed", "work_item", "global"), ("sub", "acq_rel", "subgroup", "global"),
    ("min", "seq_cst", "workgroup", "workgroup"), ("max", "release", None, "workgroup"),
    ("and", "acquire", None, "global"), ("or", "seq_cst", "device", "global"),
    ("xor", "relaxed", "device", "global"), ("exchange", "acq_rel", "device", "global"),
    ("cmpxchg", "acq_rel", "device", "global"), ("cmpxchg", "seq_cst", None, "workgroup"),
])
def test_atomic_scope_and_semantics(kind, order, scope, space):
    instrs = emit(B.one_atomic_module(kind, order=order, scope=scope, space=space,
                                      failure="acquire"))
    c = consts(instrs)
    (atom,) = [i for i in instrs if i.opname.startswith("OpAtomic")]
    opcode = {"load": "OpAtomicLoad", "store": "OpAtomicStore", "cmpxchg":
              "OpAtomicCompareExchange", "add": "OpAtomicIAdd", "sub": "OpAtomicISub",
              "min": "OpAtomicUMin", "max": "OpAtomicUMax", "and": "OpAtomicAnd",
              "or": "OpAtomicOr", "xor": "OpAtomicXor", "exchange": "OpAtomicExchange"}
    assert atom.opname == opcode[kind]
    ids = [o.value for o in atom.operands if hasattr(o, "value")]
    first = 0 if kind == "store" else 1                  # skip the result type
    scope_id, sem_id = ids[first + 1], ids[first + 2]
    want_scope = SCOPES[scope or ("workgroup" if space == "workgroup" else "device")]
    mem = 0x100 if space == "workgroup" else 0x200
    assert c[scope_id] == want_scope
    assert c[sem_id] == ORDER_BITS[order] | mem
    if kind == "cmpxchg":
        assert c[ids[first + 3]] == ORDER_BITS["acquire"] | mem


def test_dynamic_arena_is_one_hidden_parameter_of_the_most_aligned_view():
    b = Builder(Module("dyn"))
    fn = b.function("dyn", [("out", ptr(U32, "global"))], VOID, kind="kernel")
    b.position_at_end(b.append_block(fn, "entry"))
    halves = b.dynamic_shared(U16, "h")
    words = b.dynamic_shared(U32, "w")
    more = b.dynamic_shared(U16, "h2")
    b.store(b.ptradd(halves, b.const(I64, 1)), b.const(U16, 7))
    b.store(b.ptradd(more, b.const(I64, 0)), b.const(U16, 9))
    b.store(fn.params[0], b.load(words))
    b.ret()
    instrs = emit(b.module)
    types = {i.result: i for i in instrs if i.opname.startswith("OpType")}
    (fn_type,) = [t for t in types.values() if t.opname == "OpTypeFunction"]
    params = [types[p.value] for p in fn_type.operands[1:]]
    assert len(params) == 2
    hidden = params[1]
    assert hidden.opname == "OpTypePointer" and hidden.operands[0] == "Workgroup"
    assert types[hidden.operands[1].value].operands[0] == 32   # u32 view, align 4 > 2
    assert len(ops(instrs, "OpBitcast")) == 2                  # the two u16 views


def test_output_is_deterministic():
    for make in (K.atomics_module, K.subgroup_module, K.intrinsics_module):
        assert emit_spirv(make()) == emit_spirv(make())


def test_typical_200_line_kernel_file_emits_valid_spirv():
    """bench/kernels/typical200.mettle, the file whose emission bench/front_end_speed.py
    times against gpu.md's few milliseconds, emits SPIR-V that validates."""
    api = pytest.importorskip("toolchain.compiler.frontend.api")
    path = REPO / "bench" / "kernels" / "typical200.mettle"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    module, _ = api.compile_to_ir(str(path), gpu=True)
    spv = emit_spirv(module)
    validate(spv)


def test_builtins_loaded_in_helpers_join_the_kernel_interface():
    b = Builder(Module("h"))
    h = b.function("lane_of", [], U32)
    b.position_at_end(b.append_block(h, "entry"))
    b.ret(b.add(b.gpu_index("block", "y"), b.subgroup("local_id", U32)))
    fn = b.function("k", [("out", ptr(U32, "global"))], VOID, kind="kernel")
    b.position_at_end(b.append_block(fn, "entry"))
    b.store(fn.params[0], b.call(h, []))
    b.ret()
    instrs = emit(b.module)
    builtins = {i.operands[0].value: i.operands[2] for i in ops(instrs, "OpDecorate")
                if i.operands[1] == "BuiltIn"}
    (ep,) = ops(instrs, "OpEntryPoint")
    assert {builtins[v.value] for v in ep.operands[3:]} == {
        "WorkgroupId", "SubgroupLocalInvocationId"}
