"""Private slots kept in registers (targets/ptx/promote.py): struct locals, copies, fields
of mixed widths (int64, int32, uint8, bool, int8) and a tagged enum with match compile to
PTX with no `.local` memory at -O0 and -O, and that PTX runs on the CPU PTX interpreter
(tests/tensor/ptx_sim.py) against a Python oracle. A slot whose address escapes, or whose
pieces overlap (a payload read at two widths), stays in memory."""
from __future__ import annotations

import pytest

from tests.support.aggregate_kernel import MIXED_SOURCE as SOURCE
from tests.support.aggregate_kernel import mixed_expected as expected
from toolchain.compiler.driver import Options, compile_file

np = pytest.importorskip("numpy")
from tests.tensor.ptx_sim import Sim  # noqa: E402  (needs numpy)


def ptx(tmp_path, src: str, optimize: bool) -> str:
    path = tmp_path / "k.mettle"
    path.write_text(src)
    return compile_file(str(path), Options(emit="ptx", optimize=optimize,
                                           gpu_arch="sm_90a")).data.decode()


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O"])
def test_struct_locals_live_in_registers_and_run(tmp_path, ptxas, optimize):
    text = ptx(tmp_path, SOURCE, optimize)
    assert ".local" not in text and "__local_depot" not in text
    ptxas(text, "sm_90a")
    n = 40
    # whole-value copies read pieces no variant wrote (Empty's payload): any value will do
    mem = Sim(text, "k", undefined=0).run(1, 64, [
        ("buf", "out", np.zeros(3 * n, np.float32)),
        ("buf", "iout", np.zeros(3 * n, np.int64)), ("u32", n)])
    want, iwant = expected(n)
    np.testing.assert_array_equal(mem.read("out"), want)
    np.testing.assert_array_equal(mem.read("iout"), iwant)


OVERLAPS = """
enum U { F(float32), L(int64) }
kernel k(out: int32*) {
    var u: U = F(1.0);
    if (out[1] > 0) { u = L(7); }
    match (u) { case F(f): { out[2] = (int32)f; } case L(l): { out[2] = (int32)l; } }
}
"""


def test_a_payload_read_at_two_widths_stays_in_memory(tmp_path, ptxas):
    # F's payload is 4 bytes where L's is 8: the pieces overlap, so the enum's slots keep
    # their .local arrays (device code cannot take a local's address, the other reason)
    text = ptx(tmp_path, OVERLAPS, False)
    ptxas(text, "sm_90a")
    assert text.count(".local .align 8 .b8") >= 1 and "st.local" in text


def test_the_struct_kernel_inlined_at_O_runs_in_registers(tmp_path, ptxas):
    # tests/data/kernels/aggregates.mettle with Big's payload narrowed to int32 (an int64
    # payload overlaps Circle's float32 one, which keeps `s` in memory, see above): -O
    # inlines every struct-taking helper and keeps every slot in registers
    from tests.support.aggregate_kernel import KERNEL, OUTPUTS, SOURCE as KERNEL_FILE
    from tests.support.aggregate_kernel import expected as kernel_expected
    src = KERNEL_FILE.read_text().replace("Big(int64)", "Big(int32)") \
        .replace("s = Big((int64)i);", "s = Big(i);")
    text = ptx(tmp_path, src, True)
    assert "call.uni" not in text and ".local" not in text
    ptxas(text, "sm_90a")
    n = 100
    mem = Sim(text, KERNEL, undefined=0).run(2, 64, [
        ("buf", "out", np.zeros(n * OUTPUTS, np.float32)),
        ("buf", "iout", np.zeros(n * OUTPUTS, np.int64)), ("u32", n)])
    want, iwant = kernel_expected(n)
    np.testing.assert_array_equal(mem.read("out"), want)
    np.testing.assert_array_equal(mem.read("iout"), iwant)
