"""The IR text reader: what `--dump-ir` prints reads back to the same text, including SSA
phis, tensor descriptors, globals and structs; bad text is a located IRParseError."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import format_module, verify_module
from toolchain.compiler.ir.reader import IRParseError, parse_function, parse_module
from toolchain.compiler.opt.analyses import Analyses
from toolchain.compiler.opt.manager import PASSES

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(str(p.relative_to(REPO)) for pattern in (
    "tests/data/*/*.mettle", "tests/spirv_emit/data/*.mettle", "app/*.mettle")
    for p in REPO.glob(pattern))


def _module(path: str, gpu: bool):
    try:
        return compile_to_ir(str(REPO / path), gpu=gpu)[0]
    except Exception as e:                     # noqa: BLE001 - host-only or GPU-only sources
        pytest.skip(f"{path} does not compile with gpu={gpu}: {e}")


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "host"])
@pytest.mark.parametrize("path", SOURCES)
def test_dump_ir_round_trips(path, gpu):
    text = format_module(_module(path, gpu))
    again = parse_module(text)
    verify_module(again, ssa=True)
    assert format_module(again) == text


@pytest.mark.parametrize("path", ["tests/data/gpu_suite/rows.mettle",
                                  "tests/data/frontend_sema/host_program.mettle"])
def test_ssa_form_round_trips(path):
    m = _module(path, "gpu_suite" in path)
    for fn in m.functions.values():
        if fn.blocks:
            PASSES["mem2reg"].run(fn, Analyses(fn, m))
    text = format_module(m)
    assert " = phi " in text
    again = parse_module(text)
    verify_module(again, ssa=True)
    assert format_module(again) == text


def test_parse_errors_name_the_line():
    with pytest.raises(IRParseError) as e:
        parse_function("function @f() -> void {\nentry:\n  %0 = add i32 %1, 1:i32\n  ret\n}\n")
    assert e.value.line == 3 and "undefined value %1" in str(e.value)
    with pytest.raises(IRParseError) as e:
        parse_function("function @f() -> void {\nentry:\n  br nowhere\n}\n")
    assert "undefined block nowhere" in str(e.value)
    with pytest.raises(IRParseError) as e:
        parse_module("function @f(%a: q32) -> void {\nentry:\n  ret\n}\n")
    assert e.value.line == 1 and "unknown type q32" in str(e.value)
