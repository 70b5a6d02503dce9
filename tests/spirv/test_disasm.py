"""Disassembler: decoded instructions re-encode to the same words; text is readable."""
from __future__ import annotations

import struct

import pytest

from tests.spirv.kernels import scaled_sum_module, vadd_module
from toolchain.compiler.targets.spirv import _grammar as G
from toolchain.compiler.targets.spirv.disasm import DecodeError, decode, disassemble
from toolchain.compiler.targets.spirv.encoder import encode
from toolchain.compiler.targets.spirv.module import Module


def _mixed_module() -> Module:
    m = scaled_sum_module()
    m.require_capability("Int8")
    m.const(m.type_int(64), 0xDEAD_BEEF_0123_4567)
    m.const(m.type_float(64), 3.25)
    m.const(m.type_int(8), 200)
    m.debug("OpSource", "OpenCL_C", 200000)
    return m


@pytest.mark.parametrize("build", [vadd_module, scaled_sum_module, _mixed_module])
def test_decode_then_encode_gives_the_same_words(build):
    data = build().assemble()
    _, ins = decode(data)
    words = list(struct.unpack(f"<{len(data) // 4}I", data))[5:]
    again = [w for i in ins for w in encode(i.opname, i.args(), i.result).words]
    assert again == words


def test_text_form():
    text = disassemble(_mixed_module().assemble())
    lines = text.splitlines()
    assert lines[0] == "; SPIR-V" and "; Version: 1.0" in lines
    assert "OpMemoryModel Physical64 OpenCL" in lines
    assert any(ln.endswith('= OpExtInstImport "OpenCL.std"') for ln in lines)
    assert any(" fabs %" in ln and "OpExtInst" in ln for ln in lines)
    assert any(ln.endswith(f"OpConstant %{_int_type(lines, 64)} {0xDEAD_BEEF_0123_4567}")
               for ln in lines)
    assert any(ln.endswith(" 3.25") for ln in lines)
    assert "OpSource OpenCL_C 200000" in lines


def _int_type(lines: list[str], width: int) -> int:
    for ln in lines:
        if ln.endswith(f"= OpTypeInt {width} 0"):
            return int(ln.split()[0][1:])
    raise AssertionError(f"no {width}-bit int type")


def test_bitmask_text_and_round_trip():
    m = vadd_module()
    text = disassemble(m.assemble())
    assert "Aligned 4" in text and "BuiltIn GlobalInvocationId" in text
    words = encode("OpLoad", (1, 2, "Volatile|Aligned", 8), result_id=3).words
    data = struct.pack("<5I", G.MAGIC_NUMBER, 0x10000, 0, 4, 0)
    data += struct.pack(f"<{len(words)}I", *words)
    assert disassemble(data).splitlines()[-1] == "%3 = OpLoad %1 %2 Volatile|Aligned 8"


@pytest.mark.parametrize("data, message", [
    (b"\x00" * 19, "whole number"),
    (struct.pack("<5I", 0x12345678, 0, 0, 1, 0), "magic"),
    (struct.pack("<6I", G.MAGIC_NUMBER, 0x10000, 0, 1, 0, (9 << 16) | 17), "word count"),
    (struct.pack("<6I", G.MAGIC_NUMBER, 0x10000, 0, 1, 0, (1 << 16) | 0xFFFF), "unknown"),
])
def test_malformed_input_is_reported(data, message):
    with pytest.raises(DecodeError, match=message):
        decode(data)
