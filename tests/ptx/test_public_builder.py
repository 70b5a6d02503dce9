"""A kernel plus device helpers built through `ir.Builder` alone emit PTX that assembles.
(How fast emission is, and that it stays linear in the module size, bench/front_end_speed.py
measures.)"""
import subprocess
import sys


SCRIPT = r"""
import sys
from toolchain.compiler.ir import Builder, Module, F32, I32, I64, VOID, ptr
from toolchain.compiler.targets.ptx import emit_ptx, resolve_profile
m = Module("pub")
b = Builder(m)
sq = b.function("square", [("x", F32)], F32)
b.position_at_end(b.append_block(sq, "entry"))
b.ret(b.mul(sq.params[0], sq.params[0]))
norm = b.function("norm2", [("x", F32), ("y", F32)], F32)
b.position_at_end(b.append_block(norm, "entry"))
s = b.add(b.call(sq, [norm.params[0]]), b.call(sq, [norm.params[1]]))
b.ret(b.intrinsic("math.sqrt", F32, [s]))
k = b.function("lengths", [("xy", ptr(F32, "global")), ("out", ptr(F32, "global"))], VOID,
               kind="kernel", block_shape=(128, 1, 1))
b.position_at_end(b.append_block(k, "entry"))
i = b.convert(b.gpu_index("thread", "x"), I32)
two = b.convert(b.mul(i, b.const(I32, 2)), I64)
x = b.load(b.ptradd(k.params[0], two))
y = b.load(b.ptradd(k.params[0], b.add(two, b.const(I64, 1))))
b.store(b.ptradd(k.params[1], b.convert(i, I64)), b.call(norm, [x, y]))
b.ret()
sys.stdout.write(emit_ptx(m, resolve_profile(sys.argv[1], None)))
assert not any(n.startswith("toolchain.compiler.frontend") for n in sys.modules), \
    "the PTX path imported the frontend"
"""


def test_builder_only_kernel_with_helpers_assembles(ptxas):
    for arch, gpu in (("sm_90a", "sm_90a"), ("gb10", "sm_121a"), ("portable", "sm_75")):
        proc = subprocess.run([sys.executable, "-c", SCRIPT, arch], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout
        assert text.index(".func (.param .f32 func_retval0) square(") < \
            text.index(".func (.param .f32 func_retval0) norm2(") < \
            text.index(".visible .entry lengths(")
        assert "call.uni (retval0), square, (param0);" in text
        ptxas(text, gpu)
