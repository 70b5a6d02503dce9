"""Disassembly of emitted modules matches the blessed golden files, and each validates.

Golden files: tests/spirv_emit/golden/*.spvasm; regenerate with
`METTLE_BLESS=1 python -m pytest tests/spirv_emit/test_golden.py` and review the diff."""
from __future__ import annotations

import pytest

from tests.spirv_emit import barriers as B
from tests.spirv_emit import irkernels as K
from tests.spirv_emit.golden import check_golden
from tests.support.spirv import validate
from toolchain.compiler.ir import U64
from toolchain.compiler.targets.spirv import emit_spirv
from toolchain.compiler.targets.spirv.disasm import disassemble

ATOMIC_FORMS = ["load", "store", "cmpxchg", "add", "sub", "min", "max", "and", "or", "xor",
                "exchange"]

CASES = {
    "vadd": (K.vadd_module, {}, "opencl2.0"),
    "saxpy_helper": (K.saxpy_module, {}, "opencl2.0"),
    "index3d_bool_local": (K.index3d_module, {}, "opencl2.0"),
    "math": (K.math_module, {}, "opencl2.0"),
    "barriers": (B.barriers_module, {}, "opencl2.0"),
    "workgroup_private_arrays": (K.staged_module, {}, "opencl2.0"),
    "dynamic_workgroup": (K.dynamic_module, {}, "opencl2.0"),
    "async_unrolled": (lambda: K.async_module(True), {}, "opencl2.0"),
    "async_loop": (lambda: K.async_module(False), {}, "opencl2.0"),
    "subgroups_khr": (K.subgroup_module, {}, "opencl2.0"),
    "subgroups_core": (K.subgroup_module, {"subgroup_ops": "core"}, "opencl2.0"),
    "intrinsics": (K.intrinsics_module, {}, "opencl2.0"),
    "vec4": (K.vec4_module, {}, "opencl2.0"),
    "generic_casts": (B.generic_module, {}, "opencl2.0"),
    "aggregates_globals": (K.aggregates_module, {}, "opencl2.0"),
    # u64 atomics declare Int64Atomics, which spirv-val accepts only under spv1.0
    "atomics_u64": (lambda: K.atomics_module(U64), {}, "spv1.0"),
}
for form in ATOMIC_FORMS:
    CASES[f"atomic_{form}"] = (lambda f=form: B.one_atomic_module(f), {}, "opencl2.0")
CASES["atomic_add_workgroup"] = (
    lambda: B.one_atomic_module("add", space="workgroup", order="relaxed"), {}, "opencl2.0")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    make, kw, env = CASES[name]
    spv = emit_spirv(make(), **kw)
    validate(spv, env)
    check_golden(name, disassemble(spv))
