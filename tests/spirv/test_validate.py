"""spirv-val accepts the hand-built OpenCL 2.0 modules (and rejects what the profile lacks)."""
from __future__ import annotations

from tests.spirv.kernels import scaled_sum_module, vadd_module
from tests.support.spirv import rejects, validate
from toolchain.compiler.targets.spirv.module import Module


def test_vadd_validates_for_opencl2():
    validate(vadd_module().assemble(), target_env="opencl2.0")
    validate(vadd_module(local_size=(64, 1, 1)).assemble(), target_env="opencl2.0")


def test_scaled_sum_validates_for_opencl2():
    validate(scaled_sum_module().assemble(), target_env="opencl2.0")


def test_float16_is_outside_the_opencl2_profile():
    # LANGUAGE.md 12.6: Float16 is not in the OpenCL 2.0 profile; spirv-val says so, while the
    # same module is valid SPIR-V 1.0 (which is why Mettle converts halves without it).
    m = vadd_module()
    m.type_float(16)
    assert "Float16" in rejects(m.assemble(), target_env="opencl2.0")
    validate(m.assemble(), target_env="spv1.0")


def test_a_broken_module_is_rejected():
    m = Module()
    fn = m.function(m.type_void(), [], name="no_terminator")
    fn.block().op("OpNop")
    m.entry_point("Kernel", fn, "no_terminator")
    rejects(m.assemble())
