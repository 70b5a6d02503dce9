"""Struct values in device code (targets/ptx/lower_aggregate.py): the kernel of
tests/support/aggregate_kernel.py assembles with ptxas at -O0 and -O on every assembly
target, and its SPIR-V twin validates and runs on PoCL against the exact oracle (the
hardware run of the PTX is tests/gpu/test_aggregates.py). IR-level cases cover what the
frontend does not write today: aggregate locals, `select` and undef of struct type."""
from __future__ import annotations

import pytest

from tests.ptx.helpers import TARGETS, emit
from tests.support.aggregate_kernel import KERNEL, OUTPUTS, SOURCE, expected
from tests.support.filecheck import filecheck
from tests.support.opencl import Buf, Scalar, opencl_available, run_spirv_kernel
from tests.support.spirv import validate
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.ir.reader import parse_module
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def build(emit_kind: str, optimize: bool, arch: str | None = None) -> bytes:
    return compile_file(str(SOURCE), Options(emit=emit_kind, optimize=optimize,
                                             gpu_arch=arch)).data


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O"])
@pytest.mark.parametrize("arch,gpu_name", TARGETS)
def test_struct_kernel_assembles(ptxas, arch, gpu_name, optimize):
    text = build("ptx", optimize, arch).decode()
    ptxas(text, gpu_name)
    if optimize:        # -O inlines every struct-taking helper (their ABI is -O0's)
        assert "call.uni" not in text
        return
    # by-value structs use the PTX ABI's byte arrays, one access per scalar field: Vec3
    # (12 bytes, 4-aligned) in three b32 pieces; Mixed (int64, int32, uint8, bool: 16 bytes)
    # in b64, b32, u8, u8 pieces; a struct local is registers, not .local memory
    filecheck(text, """
CHECK: .func (.param .align 4 .b8 func_retval0[12]) scale(
CHECK-NEXT: .param .align 4 .b8 scale_param_0[12],
CHECK: ld.param.b32 {{%r[0-9]+}}, [scale_param_0+8];
CHECK: .func (.param .align 8 .b8 func_retval0[16]) bump(
CHECK: ld.param.b64 {{%rd[0-9]+}}, [bump_param_0];
CHECK-NEXT: ld.param.b32 {{%r[0-9]+}}, [bump_param_0+8];
CHECK-NEXT: ld.param.u8 {{%rs[0-9]+}}, [bump_param_0+12];
CHECK-NEXT: ld.param.u8 {{%rs[0-9]+}}, [bump_param_0+13];
CHECK-NOT: .local
CHECK: st.param.u8 [func_retval0+13], {{%rs[0-9]+}};
""")


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O"])
def test_struct_kernel_runs_on_pocl(optimize):
    np = pytest.importorskip("numpy")
    ok, why = opencl_available()
    if not ok:
        pytest.skip(why)
    spv = build("spirv", optimize)
    validate(spv)
    n, total = 300, 320
    want, iwant = expected(n)
    out = run_spirv_kernel(spv, KERNEL, [total], [64],
                           [Buf(np.full(n * OUTPUTS, np.nan, np.float32), out=True),
                            Buf(np.full(n * OUTPUTS, -5, np.int64), "int64", out=True),
                            Scalar(n, "int32")])
    np.testing.assert_array_equal(np.frombuffer(out[0], np.float32), want)
    np.testing.assert_array_equal(np.frombuffer(out[1], np.int64), iwant)


AGGREGATE_IR = """; module m
struct %P { a: i64, b: u8, c: f32 }
function @pick(%x: %P, %y: %P, %c: bool) -> %P {
  local $s: %P
entry:
  %0 = select %P %c, %x, %y
  local.set $s, %0
  cbr %c, t, e
t:
  local.set $s, %x
  br e
e:
  %1 = local.get %P $s
  ret %1
}
kernel @k(%p: ptr<%P, global>, %f: bool) -> void export {
entry:
  %0 = load %P %p
  %1 = ptradd ptr<%P, global> %p, 1:i64
  %2 = load %P %1
  %3 = call %P @pick, %0, %2, %f
  %4 = ptradd ptr<%P, global> %p, 2:i64
  store %4, %3
  %5 = ptradd ptr<%P, global> %p, 3:i64
  store %5, undef:%P
  ret
}
"""


@pytest.mark.parametrize("arch,gpu_name", TARGETS)
def test_aggregate_locals_selects_and_undef(ptxas, arch, gpu_name):
    text = emit(parse_module(AGGREGATE_IR), arch)
    ptxas(text, gpu_name)
    filecheck(text, """
CHECK: selp.b64 [[A:%rd[0-9]+]], %rd1, %rd2, [[P:%p[0-9]+]];
CHECK-NEXT: selp.b16 [[B:%rs[0-9]+]], %rs1, %rs2, [[P]];
CHECK-NEXT: selp.b32 [[C:%r[0-9]+]], %r1, %r2, [[P]];
CHECK-NEXT: mov.b64 [[SA:%rd[0-9]+]], [[A]];
CHECK-NEXT: mov.b16 [[SB:%rs[0-9]+]], [[B]];
CHECK-NEXT: mov.b32 [[SC:%r[0-9]+]], [[C]];
CHECK: mov.b64 [[SA]], %rd1;
CHECK-NEXT: mov.b16 [[SB]], %rs1;
CHECK-NEXT: mov.b32 [[SC]], %r1;
CHECK: st.param.b64 [func_retval0], [[SA]];
CHECK-NEXT: st.param.u8 [func_retval0+8], [[SB]];
CHECK-NEXT: st.param.b32 [func_retval0+12], [[SC]];
CHECK: .entry k(
CHECK: ld.global.u8 {{%rs[0-9]+}}, [%rd1+24];
CHECK: call.uni (retval0), pick, (param0, param1, param2);
CHECK: st.global.b32 [%rd1+44], {{%r[0-9]+}};
CHECK-NEXT: ret;
""")
