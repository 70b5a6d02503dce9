"""PTX as instruction objects: what selection builds, the printer, and the text reader."""
from __future__ import annotations

import pytest

from toolchain.compiler.targets.ptx import lower_ptx, resolve_profile
from toolchain.compiler.targets.ptx.instr import (DIRECTIVE, LABEL, OP, SCOPE, Addr, Vec,
                                                  dest_count)
from toolchain.compiler.targets.ptx.parse import parse_module, parse_statement
from toolchain.compiler.targets.ptx.printer import format_instr, format_module

from . import kernels as K


def test_fields_of_a_guarded_instruction_and_operand_kinds():
    i = parse_statement("@!%p3 ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd7+16];")
    assert (i.kind, i.name, i.opcode, i.mods) == (OP, "ld.global.nc.v4.f32", "ld",
                                                  ("global", "nc", "v4", "f32"))
    assert i.dsts == (Vec(("%f1", "%f2", "%f3", "%f4")),)
    assert i.srcs == (Addr("%rd7", 16),) and (i.guard, i.negated) == ("%p3", True)
    st = parse_statement("st.shared.u32 [%rd1], %r2")
    assert st.dsts == () and st.srcs == (Addr("%rd1"), "%r2")
    assert parse_statement("$L__BB2:\t// exit").kind == LABEL
    assert parse_statement("{").kind == SCOPE
    assert parse_statement(".param .b32 param0;").kind == DIRECTIVE
    assert [dest_count(n) for n in ("st.global.f32", "bra", "mov.u32", "wmma.store.d.sync",
                                    "setp.lt.s32", "cp.async.ca.shared.global")] == \
        [0, 0, 1, 0, 1, 0]


@pytest.mark.parametrize("name", sorted(K.ALL))
@pytest.mark.parametrize("arch", ["sm_90a", "portable"])
def test_printed_text_reads_back_into_the_same_objects(name, arch):
    module = lower_ptx(K.ALL[name](), resolve_profile(arch, None), gpu_checks=True)
    text = format_module(module)
    back = {f.name: f for f in parse_module(text).functions}
    assert list(back) == [f.name for f in module.functions]
    for f in module.functions:
        mine = [format_instr(i) for i in f.body if i.kind in (OP, LABEL)]
        read = [format_instr(i) for i in back[f.name].body if i.kind in (OP, LABEL)]
        assert [m.split("\t// ")[0] for m in mine] == read
        assert back[f.name].params == f.params
        ops = [i for i in f.body if i.kind == OP]
        assert all(isinstance(i.name, str) and i.opcode == i.name.split(".")[0] for i in ops)


def test_tensor_lowerings_reach_the_printer_as_objects():
    """The tensor package builds objects with ops.py's constructors, so the module holds
    only objects (the simulator and peepholes read them) and prints as the compile did."""
    from tests.tensor.kernels import mma_source

    from .source import compile_source
    res = compile_source(mma_source("k", "f16", "f16", "f32", "f32", "m16n16k16"), "sm_90a")
    body = res.objects.function("k").body
    assert any(i.kind == OP and i.opcode == "wmma" for i in body)
    assert format_module(res.objects).encode() == res.data
