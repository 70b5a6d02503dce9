"""Private slots kept in registers (targets/ptx/promote.py): struct locals, copies, fields
of mixed widths (int64, int32, uint8, bool, int8) and a tagged enum with match compile to
PTX with no `.local` memory at -O0 and -O, and that PTX runs on the CPU PTX interpreter
(tests/tensor/ptx_sim.py) against a Python oracle. Payloads of different widths in one
enum (pieces that overlap) share a 64-bit register as bit fields; only overlapping pieces
spanning more than 8 bytes would keep a slot in memory."""
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
enum U { F(float32), L(int64), B(uint8), N(int16), Q(bool), E }
kernel k(out: int64*, n: int32) {
    var i: int32 = (int32)thread.x;
    if (i >= n) { return; }
    var u: U = F(1.5 * (float32)i);
    if (i % 6 == 1) { u = L((int64)i * 3000000000 + 5); }
    if (i % 6 == 2) { u = B((uint8)(i * 37)); }
    if (i % 6 == 3) { u = N((int16)(-300 * i)); }
    if (i % 6 == 4) { u = Q(i % 4 == 0); }
    if (i % 6 == 5) { u = E; }
    var w: U = u;
    var r: int64 = 0;
    match (w) {
        case F(f): { r = (int64)(f * 2.0); }
        case L(l): { r = l; }
        case B(b): { r = (int64)b + 1000; }
        case N(s): { r = (int64)s; }
        case Q(q): { if (q) { r = 77; } else { r = 78; } }
        case E: { r = -5; }
    }
    out[i] = r;
}
"""


def overlaps_expected(n: int) -> np.ndarray:
    def one(i: int) -> int:
        return (3 * i, i * 3000000000 + 5, (i * 37) % 256 + 1000, -300 * i,
                77 if i % 4 == 0 else 78, -5)[i % 6]
    return np.array([one(i) for i in range(n)], np.int64)


@pytest.mark.parametrize("optimize", [False, True], ids=["O0", "O"])
def test_payloads_of_different_widths_share_a_register(tmp_path, ptxas, optimize):
    # F's payload is 4 bytes, L's 8, B's and Q's 1, N's 2, all at one offset, and
    # `w = u` copies the whole area: one 64-bit register holds them as bit fields
    text = ptx(tmp_path, OVERLAPS, optimize)
    ptxas(text, "sm_90a")
    assert ".local" not in text and "__local_depot" not in text
    if not optimize:
        assert "bfi.b64" in text and "bfe.u64" in text
    n = 64
    mem = Sim(text, "k", undefined=0).run(1, n, [("buf", "out", np.zeros(n, np.int64)),
                                                  ("u32", n)])
    np.testing.assert_array_equal(mem.read("out"), overlaps_expected(n))


def test_overlapping_pieces_share_a_unit_only_within_8_bytes():
    from toolchain.compiler.targets.ptx.promote import _home, _units
    assert _units({(0, 4), (8, 4), (8, 8)}) == {0: 4, 8: 8}
    assert _home((8, 4), {0: 4, 8: 8}) == (8, 0)
    assert _units({(8, 1), (10, 2), (8, 8), (16, 4)}) == {8: 8, 16: 4}
    assert _home((10, 2), {8: 8, 16: 4}) == (8, 16)
    assert _units({(2, 4), (4, 8)}) is None                 # 10 bytes: memory


def test_the_struct_kernel_inlined_at_O_runs_in_registers(tmp_path, ptxas):
    # tests/data/kernels/aggregates.mettle (Big's int64 payload overlaps Circle's float32
    # one): -O inlines every struct-taking helper and keeps every slot in registers
    from tests.support.aggregate_kernel import KERNEL, OUTPUTS, SOURCE as KERNEL_FILE
    from tests.support.aggregate_kernel import expected as kernel_expected
    text = ptx(tmp_path, KERNEL_FILE.read_text(), True)
    assert "call.uni" not in text and ".local" not in text
    ptxas(text, "sm_90a")
    n = 100
    mem = Sim(text, KERNEL, undefined=0).run(2, 64, [
        ("buf", "out", np.zeros(n * OUTPUTS, np.float32)),
        ("buf", "iout", np.zeros(n * OUTPUTS, np.int64)), ("u32", n)])
    want, iwant = kernel_expected(n)
    np.testing.assert_array_equal(mem.read("out"), want)
    np.testing.assert_array_equal(mem.read("iout"), iwant)
