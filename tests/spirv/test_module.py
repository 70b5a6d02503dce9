"""Module writer: generic encoding, deduplication, section order, capability collection."""
from __future__ import annotations

import struct

import pytest

from tests.spirv.kernels import scaled_sum_module, vadd_module
from toolchain.compiler.targets.spirv import _grammar as G
from toolchain.compiler.targets.spirv.disasm import decode
from toolchain.compiler.targets.spirv.encoder import SpirvBuildError, encode, string_words
from toolchain.compiler.targets.spirv.module import Module

# SPIR-V spec 2.4 logical layout; each instruction maps to the first section it may sit in.
SECTIONS = [("OpCapability",), ("OpExtension",), ("OpExtInstImport",), ("OpMemoryModel",),
            ("OpEntryPoint",), ("OpExecutionMode",), ("OpString", "OpName", "OpSource"),
            ("OpDecorate", "OpMemberDecorate"), ("OpType*", "OpConstant*", "OpVariable"),
            ("OpFunction",)]


def _section(opname: str, in_function: bool) -> int:
    if in_function:
        return len(SECTIONS) - 1
    for i, names in enumerate(SECTIONS):
        if any(opname == n or (n.endswith("*") and opname.startswith(n[:-1])) for n in names):
            return i
    raise AssertionError(f"{opname} outside a function")


def test_string_literal_is_nul_terminated_and_padded():
    for text in ("", "abc", "abcd", "vadd"):
        words = string_words(text)
        raw = b"".join(w.to_bytes(4, "little") for w in words)
        assert len(raw) % 4 == 0 and raw.rstrip(b"\0") == text.encode()
        assert len(raw) > len(text)  # always at least one NUL


def test_word_count_and_opcode_come_from_the_grammar():
    enc = encode("OpIAdd", (5, 6, 7), result_id=8)
    assert enc.words[0] == (5 << 16) | G.OPCODES["OpIAdd"][0]
    assert enc.words[1:] == [5, 8, 6, 7]


def test_bitmask_enumerants_and_their_parameters():
    aligned = G.ENUMERANTS["MemoryAccess"]["Aligned"][0]
    volatile = G.ENUMERANTS["MemoryAccess"]["Volatile"][0]
    enc = encode("OpStore", (3, 4, "Volatile|Aligned", 16))
    assert enc.words[1:] == [3, 4, aligned | volatile, 16]
    assert encode("OpStore", (3, 4, ("Aligned", "Volatile"), 8)).words[3:] == \
        [aligned | volatile, 8]
    const = G.ENUMERANTS["FunctionControl"]["Const"][0]
    assert encode("OpFunction", (1, "Const", 2), result_id=9).words[3] == const


def test_encoder_rejects_bad_operands():
    with pytest.raises(SpirvBuildError, match="not a MemoryAccess"):
        encode("OpStore", (3, 4, "Sometimes"))
    with pytest.raises(SpirvBuildError, match="missing"):
        encode("OpIAdd", (5, 6), result_id=8)
    with pytest.raises(SpirvBuildError, match="too many"):
        encode("OpReturn", (1,))
    with pytest.raises(SpirvBuildError, match="unknown SPIR-V opcode"):
        encode("OpFrobnicate", ())


def test_types_and_constants_are_deduplicated():
    m = Module()
    u32 = m.type_int(32)
    assert m.type_int(32) == u32 and m.type_int(64) != u32
    p = m.type_pointer("CrossWorkgroup", u32)
    assert m.type_pointer("CrossWorkgroup", m.type_int(32)) == p
    assert m.type_pointer("Workgroup", u32) != p
    assert m.const(u32, 7) == m.const(u32, 7) != m.const(u32, 8)
    assert m.type_function(m.type_void(), [p]) == m.type_function(m.type_void(), [p])
    assert m.type_array(u32, 4) == m.type_array(u32, 4)
    assert m.const_null(p) == m.const_null(p)
    assert m.variable(p, "CrossWorkgroup") != m.variable(p, "CrossWorkgroup")
    _, ins = decode(m.assemble())
    types = [i.opname for i in ins if i.opname.startswith("OpTypeInt")]
    assert types == ["OpTypeInt", "OpTypeInt"]


def test_constants_are_encoded_at_their_type_width():
    m = Module()
    u64, f32, f64 = m.type_int(64), m.type_float(32), m.type_float(64)
    big = 0x1234_5678_9ABC_DEF0
    consts = [m.const(u64, big), m.const(f32, 1.5), m.const(f64, -2.25), m.const(u64, -1)]
    _, ins = decode(m.assemble())
    by_id = {i.result: i for i in ins}
    assert by_id[consts[0]].shown[-1] == str(big)
    assert by_id[consts[1]].operands[-1] == struct.unpack("<I", struct.pack("<f", 1.5))[0]
    assert by_id[consts[2]].shown[-1] == "-2.25"
    assert by_id[consts[3]].shown[-1] == str(2 ** 64 - 1)


def test_sections_follow_the_spec_order():
    m = scaled_sum_module()
    m.execution_mode(m._functions[0], "LocalSize", 64, 1, 1)
    _, ins = decode(m.assemble())
    in_fn, last = False, -1
    for i in ins:
        in_fn = in_fn or i.opname == "OpFunction"
        sec = _section(i.opname, in_fn)
        assert sec >= last, f"{i.opname} after section {last}"
        last = sec
    assert [i.opname for i in ins].count("OpExecutionMode") == 1


def test_local_variables_lead_the_entry_block():
    m = Module(addressing="Logical", memory_model="OpenCL")
    u32 = m.type_int(32)
    fn = m.function(m.type_void(), [], name="f")
    blk = fn.block()
    blk.op("OpReturn")
    var = fn.local_variable(m.type_pointer("Function", u32))
    _, ins = decode(m.assemble())
    names = [i.opname for i in ins]
    label = names.index("OpLabel")
    assert names[label + 1] == "OpVariable" and ins[label + 1].result == var


def _caps(m: Module) -> list[str]:
    return [i.operands[0] for i in decode(m.assemble())[1] if i.opname == "OpCapability"]


def test_capabilities_are_collected_only_as_used():
    m = vadd_module()
    assert _caps(m) == ["Addresses", "Kernel", "Int64"]  # Physical64, Kernel model, 64-bit id
    logical = Module(addressing="Logical", memory_model="OpenCL")
    logical.type_int(32)
    assert _caps(logical) == ["Kernel"]  # the OpenCL memory model alone needs Kernel
    half = Module(addressing="Logical", memory_model="OpenCL")
    half.type_float(16)
    assert _caps(half) == ["Kernel", "Float16"]


def test_enumerant_and_opcode_capabilities_are_declared():
    m = Module(addressing="Logical", memory_model="OpenCL")
    v = m.variable(m.type_pointer("Input", m.type_int(32)), "Input")
    m.decorate(v, "BuiltIn", "WorkDim")  # Kernel per the grammar
    assert _caps(m) == ["Kernel"]
    glsl = Module(addressing="Logical", memory_model="GLSL450")
    glsl.variable(glsl.type_pointer("Input", glsl.type_int(32)), "Input")
    assert _caps(glsl) == ["Shader"]
    glsl.decorate(1, "BuiltIn", "WorkDim")
    assert _caps(glsl) == ["Shader", "Kernel"]
    m2 = Module(addressing="Logical", memory_model="OpenCL", version=(1, 3))
    fn = m2.function(m2.type_void(), [])
    blk = fn.block()
    blk.op("OpGroupNonUniformElect", m2.type_bool(), m2.const(m2.type_int(32), 3))
    blk.op("OpReturn")
    assert "GroupNonUniform" in _caps(m2)


def test_explicit_capabilities_and_implications():
    m = Module(addressing="Logical", memory_model="OpenCL")
    m.require_capability("Int64Atomics")
    m.type_int(64)
    assert _caps(m) == ["Kernel", "Int64", "Int64Atomics"]
    with pytest.raises(SpirvBuildError):
        m.require_capability("NoSuchCapability")


def test_newer_opcode_is_refused_in_an_older_module():
    m = Module(version=(1, 0))
    fn = m.function(m.type_void(), [])
    with pytest.raises(SpirvBuildError, match="needs SPIR-V 1.3"):
        fn.block().op("OpGroupNonUniformElect", m.type_bool(), 1)


def test_assembly_is_deterministic_and_header_is_right():
    a, b = vadd_module().assemble(), vadd_module().assemble()
    assert a == b
    header, _ = decode(a)
    assert header["version"] == (1, 0) and header["schema"] == 0
    max_id = max(i.result or 0 for i in decode(a)[1])
    assert header["bound"] == max_id + 1
