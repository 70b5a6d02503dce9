"""WMMA operand staging (targets/ptx/tensor/staging.py) on the CPU: PTX structure, the
run-time versioning test, the conditions that keep the direct loads, the off switch,
ptxas (sm_90a, sm_80, sm_121a) with no spills, and staged == direct == oracle bitwise on
the CPU PTX interpreter (tests/tensor/ptx_sim.py, extended below with a WMMA fragment
model) including K tails and the misaligned fallbacks. tests/gpu/test_wmma_staging.py
runs the same kernels on the device.
"""
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.tensor.ptx_sim import Sim, SimError, bf16_val, bits_f32, f16_val, f32_bits
from tests.tensor.staging_kernels import ALL, CASES, kloop, kloop_launch
from toolchain.compiler import cli
from toolchain.compiler.targets.ptx.tensor import staging as staging_mod
from toolchain.compiler.driver import Options, compile_file


def compile_src(tmp_path, src: str, **kw):
    path = tmp_path / "k.mettle"
    path.write_text(src)
    kw.setdefault("optimize", True)
    kw.setdefault("gpu_arch", "sm_90a")
    r = compile_file(str(path), Options(emit="ptx", explain=True, **kw))
    return r.data.decode(), r.explain


def entry(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    return ptx[start:ptx.index("\n}\n", start)]


def no_spills(ptxas_path: str, ptx: str, arch: str, tmp_path) -> None:
    src = tmp_path / f"m_{arch}.ptx"
    src.write_text(ptx)
    proc = subprocess.run([ptxas_path, f"--gpu-name={arch}", "-v", str(src), "-o",
                           str(tmp_path / f"m_{arch}.cubin")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = proc.stdout + proc.stderr
    assert "spill" in info and not re.search(r"[1-9]\d* bytes spill", info), info


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_121a"])
def test_staged_structure_and_ptxas(tmp_path, ptxas_path, arch, monkeypatch):
    """The synchronous form (staging.PIPELINE off): ld.v4 -> st.shared.v4 -> wmma.load."""
    monkeypatch.setattr(staging_mod, "PIPELINE", False)
    ptx, explain = compile_src(tmp_path, ALL, gpu_arch=arch)
    for name, (_, fmt, bl) in CASES.items():
        body = entry(ptx, name)
        kind = "chain" if name.startswith("chain") else "loop"
        mmas = 3 if kind == "chain" else (2 if "k32" in name else 1)   # WMMA chunks
        assert re.search(rf"// mtlc\.tensor_{kind} resident group=0 tuple=\d+ budget=\d+ "
                         "staged sync: pipelining off$", body, re.M)
        assert f"{name}: line" in explain and f"tensor_{kind} group 0: operands staged" in \
            explain and "not pipelined: pipelining off" in explain
        # one 16-byte piece of A and of B per lane and chunk, into this warp's slots
        assert body.count("ld.global.v4.u32") == 2 * mmas
        assert body.count("st.shared.v4.u32") == 2 * mmas
        assert body.count("bar.warp.sync -1") == 2 * mmas
        assert "cp.async" not in body
        _staged_loads(body, fmt, bl, mmas)
        # the stores precede a sync that precedes the shared fragment loads
        first = body.index("st.shared.v4.u32")
        assert body.index("bar.warp.sync", first) < body.index(".shared." + fmt, first)
        _versioned(body, fmt, mmas)
        assert body.count("wmma.mma.sync") == 2 * mmas
        assert re.search(rf"mov\.u32 %r\d+, {name}_wmma_stage\d*;", body)
        assert re.search(rf"\.shared \.align 128 \.b8 {name}_wmma_stage\d*\[4096\];", ptx)
    no_spills(ptxas_path, ptx, arch, tmp_path)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_121a"])
def test_pipelined_structure_and_ptxas(tmp_path, ptxas_path, arch):
    """The default form: each chunk cp.async-copies its pieces into stage `buf`, then the
    step copied before it (if any) is waited for and multiplied; the store settles the
    last one."""
    ptx, explain = compile_src(tmp_path, ALL, gpu_arch=arch)
    for name, (_, fmt, bl) in CASES.items():
        body = entry(ptx, name)
        kind = "chain" if name.startswith("chain") else "loop"
        mmas = 3 if kind == "chain" else (2 if "k32" in name else 1)   # WMMA chunks
        assert re.search(rf"// mtlc\.tensor_{kind} resident group=0 tuple=\d+ budget=\d+ "
                         "staged pipelined$", body, re.M)
        assert f"tensor_{kind} group 0: operands staged through shared memory, pipelined" \
            in explain
        # A through L1, B through L2 only; no register round trip
        assert body.count("cp.async.ca.shared.global") == mmas
        assert body.count("cp.async.cg.shared.global") == mmas
        assert "ld.global.v4.u32" not in body and "st.shared.v4.u32" not in body
        assert body.count("cp.async.commit_group") == mmas
        # each copy waits for all but the newest group; the store side and the direct
        # fallback wait for all
        updates = 3 if kind == "chain" else 1
        assert body.count("cp.async.wait_group 1") == mmas
        assert body.count("cp.async.wait_group 0") == 1 + updates
        _staged_loads(body, fmt, bl, mmas + 1 + updates)
        # the refill waits for the warp (stage read two steps ago), the MMA for the copies
        for m in re.finditer(r"cp\.async\.commit_group;", body):
            before = body[:body.rindex("cp.async.ca", 0, m.start())]
            last_read = max(before.rfind("wmma.load.a"), before.rfind("wmma.load.b"), 0)
            assert "bar.warp.sync -1" in before[last_read:]
            after = body[m.end():]
            assert after.index("cp.async.wait_group 1") < after.index("bar.warp.sync") < \
                after.index("wmma.load.a")
        # run-time state: the stage the next copy fills and whether a step is pending
        assert re.search(r"xor\.b32 (%r\d+), \1, 1024;", body)
        assert re.search(r"mov\.u32 %r\d+, 1;", body)
        _versioned(body, fmt, mmas)
        # each chunk: the pending step's MMA and the direct one; each update's direct path
        # and the store settle a pending step first
        assert body.count("wmma.mma.sync") == 2 * mmas + updates + 1
        store = body.index("wmma.store.d")          # its block settles the last step first
        block = body[body.rindex("$L__BB", 0, store):store]
        assert re.search(r"cp\.async\.wait_group 0;.*wmma\.mma\.sync.*\$L__wmma_pipe_idle\d+:",
                         block, re.S)
        assert re.search(rf"mov\.u32 %r\d+, {name}_wmma_pipe\d*;", body)
        assert re.search(rf"\.shared \.align 128 \.b8 {name}_wmma_pipe\d*\[8192\];", ptx)
    no_spills(ptxas_path, ptx, arch, tmp_path)


def _staged_loads(body: str, fmt: str, bl: str, n: int) -> None:
    staged_a = re.findall(rf"wmma\.load\.a\.sync\.aligned\.row\.m16n16k16\.shared\.{fmt} "
                          r"\{[^}]*\}, \[%r\d+\], 16;", body)
    staged_b = re.findall(rf"wmma\.load\.b\.sync\.aligned\.{bl}\.m16n16k16\.shared\.{fmt} "
                          r"\{[^}]*\}, \[%r\d+\], 16;", body)
    assert len(staged_a) == len(staged_b) == n


def _versioned(body: str, fmt: str, mmas: int) -> None:
    """A uniform alignment test picks the staged or the direct form; the warp's slots are
    linear thread id / 32."""
    assert re.search(r"and\.b32 %r\d+, %r\d+, 15;", body)
    assert re.search(r"and\.b32 %r\d+, %r\d+, 7;", body)
    assert re.search(r"@%p\d+ bra\.uni \$L__wmma_direct\d+;", body)
    assert body.count(f"wmma.load.a.sync.aligned.row.m16n16k16.global.{fmt}") == mmas
    assert re.search(r"shr\.u32 %r\d+, %r\d+, 5;", body)


def _direct(body: str) -> bool:
    return "wmma_stage" not in body and ".shared.f16" not in body and \
        "bar.warp.sync" not in body and "wmma.load.a.sync.aligned.row.m16n16k16.global" in body


def test_off_switch_keeps_direct_loads(tmp_path, ptxas):
    ptx, explain = compile_src(tmp_path, kloop("k1"), wmma_staging=False)
    body = entry(ptx, "k1")
    assert _direct(body) and ".shared" not in ptx
    assert re.search(r"// mtlc\.tensor_loop resident group=0 .* direct: staging off "
                     r"\(--gpu-wmma-staging=off\)$", body, re.M)
    assert "operands loaded directly (staging off" in explain
    assert body.count("wmma.mma.sync") == 1
    ptxas(ptx, "sm_90a")


def test_cli_flag(tmp_path):
    src = tmp_path / "k.mettle"
    src.write_text(kloop("k1"))
    outs = {}
    for flag in ("on", "off"):
        out = tmp_path / f"k_{flag}.ptx"
        assert cli.main(["-i", str(src), "--emit-ptx", "-O", "--gpu-arch", "sm_90a",
                         f"--gpu-wmma-staging={flag}", "-o", str(out)]) == 0
        outs[flag] = out.read_text()
    assert " staged pipelined\n" in outs["on"] and " staged" not in outs["off"]
    assert cli.main(["-i", str(src), "--emit-ptx", "--gpu-wmma-staging=maybe"]) != 0


@pytest.mark.parametrize("why,src,kw", [
    ("is below sm_80", kloop("k1"), {"gpu_arch": "sm_75"}),
    ("32768-byte staging area is over 16384 bytes",
     kloop("k1").replace("block = 128", "block = 1024"), {}),
])
def test_conditions_that_keep_direct_loads(tmp_path, ptxas, why, src, kw):
    ptx, explain = compile_src(tmp_path, src, **kw)
    body = entry(ptx, "k1")
    assert _direct(body)
    assert re.search(rf"// mtlc\.tensor_loop resident group=0 .* direct: .*{why}", body)
    assert why in explain
    ptxas(ptx, kw.get("gpu_arch", "sm_90a"))


_USER_ASYNC = """  workgroup var t: uint16[256];
  async_copy_workgroup(&t[(int32)thread.x * 2], &a[(int32)thread.x * 2], 2, transaction: 4);
  async_copy_commit();
  async_copy_wait(0);
  var tile: int32"""


@pytest.mark.parametrize("why,src", [
    ("another 32768-byte area would take staging over 16384 bytes",
     kloop("k1").replace("block = 128", "block = 512")),
    ("the function uses async copy groups itself",
     kloop("k1").replace("  var tile: int32", _USER_ASYNC, 1)),
])
def test_conditions_that_keep_the_synchronous_form(tmp_path, ptxas, why, src):
    ptx, explain = compile_src(tmp_path, src)
    body = entry(ptx, "k1")
    assert re.search(rf"// mtlc\.tensor_loop resident group=0 .* staged sync: {why}$", body,
                     re.M)
    assert f"not pipelined: {why}" in explain
    assert "ld.global.v4.u32" in body and "cp.async.cg.shared.global" not in body
    ptxas(ptx, "sm_90a")


_BIG_ARRAY = """  workgroup var t: float32[N];
  t[(int32)thread.x] = 0.0;
  var tile: int32"""


@pytest.mark.parametrize("floats,form", [(11520, "direct"), (10496, "sync")])
def test_own_workgroup_arrays_leave_room_for_the_areas(tmp_path, ptxas, floats, form):
    """An undeclared block's 4/8 KiB areas (4 subgroups, from its tile index) come on top
    of the kernel's own workgroup arrays: staging backs off (synchronous, then direct)
    rather than take the static shared memory over 48 KiB, which ptxas would refuse."""
    src = kloop("k1", block=False).replace("  var tile: int32", _BIG_ARRAY.replace(
        "N", str(floats)), 1)
    ptx, explain = compile_src(tmp_path, src)
    body = entry(ptx, "k1")
    if form == "direct":
        assert "wmma_stage" not in ptx and "wmma_pipe" not in ptx
        assert "46080 bytes of workgroup arrays leave no room for a 4096-byte staging area" \
            in explain
    else:
        assert " staged launch-guarded subgroups<=4 sync: another 8192-byte area would " \
            "take the kernel's static shared memory over 49152 bytes" in body
    ptxas(ptx, "sm_90a")


def test_unoptimized_compile_is_unchanged(tmp_path):
    """Staging belongs to resident groups, which only -O forms."""
    ptx, _ = compile_src(tmp_path, kloop("k1"), optimize=False)
    assert _direct(entry(ptx, "k1"))


# ---- staged vs direct on the CPU interpreter ---------------------------------------------
# ptx_sim evaluates mma.sync fragments only. WMMA fragments are opaque (the same layout for
# the load, the MMA and the store is the only contract), so this model gives them any
# consistent layout: A/B lane l, register i of n (8 for f16, 4 for bf16) holds logical
# elements 2p, 2p+1 (row-major 16x16 flat index), p = (l*n + i) % 128; C/D lane l,
# register i holds element l*8+i.
# Loads and stores go through memory with the instruction's layout and stride, so every
# staged address (pieces, slots, stride 16) and the run-time fallback are exercised.


def _elem_addr(base: int, layout: str, ld: int, r: int, c: int, size: int) -> int:
    return base + ((r * ld + c) if layout == "row" else (c * ld + r)) * size


def _slots(which: str, lane: int, i: int, n: int = 8) -> list[tuple[int, int]]:
    if which == "c":
        return [divmod(lane * 8 + i, 16)]
    p = (lane * n + i) % 128
    return [divmod(2 * p, 16), divmod(2 * p + 1, 16)]


class WmmaSim(Sim):
    def __init__(self, ptx, kernel):
        super().__init__(ptx, kernel)
        self.undefined = None
        self.wmmas = {"staged": 0, "direct": 0}

    def _step(self, th, *a):
        guard, negated, op, ops = self.code[th.pc] if th.pc < len(self.code) else \
            (None, False, "", [])
        on = guard is None or bool(th.val(guard)) != negated
        parts = op.split(".")
        if not on or not (op.startswith("wmma.") or (parts[0] in ("ld", "st") and
                                                      "v4" in parts)):
            return super()._step(th, *a)
        self.steps += 1
        if op.startswith("wmma.mma"):
            th.wait = op
            return
        th.pc += 1
        if parts[0] == "ld":                      # ld.<space>.v4.u32 {r0..r3}, [addr]
            at = th.addr(ops[1])
            for j, r in enumerate(th.vec(ops[0])):
                th.regs[r] = self.mem.load(at + 4 * j, 4)
        elif parts[0] == "st":
            at = th.addr(ops[0])
            for j, r in enumerate(th.vec(ops[1])):
                self.mem.store(at + 4 * j, 4, th.val(r))
        elif op.startswith("wmma.load"):
            which, layout = parts[2], parts[5]
            size = 4 if which == "c" else 2
            base, ld = th.addr(ops[1]), th.val(ops[2])
            if which == "a":
                self.wmmas["staged" if ".shared." in op else "direct"] += 1
            regs = th.vec(ops[0])
            for i, r in enumerate(regs):
                v = 0
                for h, (row, col) in enumerate(_slots(which, th.lane, i, len(regs))):
                    v |= self.mem.load(_elem_addr(base, layout, ld, row, col, size), size) \
                        << (16 * h)
                th.regs[r] = v
        elif op.startswith("wmma.store"):
            layout, base, ld = parts[5], th.addr(ops[0]), th.val(ops[2])
            for i, r in enumerate(th.vec(ops[1])):
                (row, col), = _slots("c", th.lane, i)
                self.mem.store(_elem_addr(base, layout, ld, row, col, 4), 4, th.val(r))
        else:
            raise SimError(f"unsupported {op}")

    def _collective(self, live):
        for th in live:
            group = self._warp(th) if th.wait != "bar.sync" else live
            if all(t.wait is not None and t.pc == th.pc for t in group):
                op, ops = self.code[th.pc][2], self.code[th.pc][3]
                if op.startswith("wmma.mma"):
                    _wmma_mma(op, group, ops)
                elif op.startswith("mma"):
                    raise SimError("mma.sync in a WMMA test")
                for t in group:
                    t.wait, t.pc = None, t.pc + 1
                return True
        return False


def _wmma_mma(op: str, lanes, ops) -> None:
    if len(lanes) != 32:
        raise SimError("wmma.mma with a partial warp")
    half = bf16_val if ".bf16." in op else f16_val
    d, a, b, c = (list(v.regs) for v in ops)
    mats = {}
    for name, regs in (("a", a), ("b", b)):
        m = np.full((16, 16), np.nan)
        for th in lanes:
            for i, r in enumerate(regs):
                for h, (row, col) in enumerate(_slots(name, th.lane, i, len(regs))):
                    v = half((th.val(r) >> (16 * h)) & 0xFFFF)
                    if not np.isnan(m[row, col]) and m[row, col] != v:   # f16: 2 copies
                        raise SimError(f"lanes disagree on {name}[{row},{col}]: a load "
                                       "read the slot before every piece was stored")
                    m[row, col] = v
        mats[name] = m
    acc = np.zeros((16, 16))
    for th in lanes:
        for i, r in enumerate(c):
            (row, col), = _slots("c", th.lane, i)
            acc[row, col] = bits_f32(th.val(r))
    out = (mats["a"] @ mats["b"] + acc).astype(np.float32)
    for th in lanes:
        for i, r in enumerate(d):
            (row, col), = _slots("c", th.lane, i)
            th.regs[r] = f32_bits(float(out[row, col]))


def _exact_operand(rng, n: int, fmt: str):
    """(uint16 bits, float64 values) of small non-zero integers (exact products and sums)."""
    x = rng.integers(1, 4, n) * rng.choice([-1, 1], n)
    if fmt == "f16":
        h = x.astype(np.float16)
        return h.view(np.uint16), h.astype(np.float64)
    bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return bits, x.astype(np.float64)


# (kernel, m, n, k, lda, ldb, aoff, staged?)
SIM_CASES = [("kloop_f16_row", 32, 32, 40, 48, 32, 0, True),     # K tail: 2 whole chunks
             ("kloop_f16_row", 32, 32, 40, 44, 32, 0, False),    # lda = 4 mod 8: fallback
             ("kloop_f16_row", 32, 32, 48, 48, 32, 2, False),    # A base 4 bytes off
             ("kloop_bf16_col", 32, 16, 48, 56, 52, 0, False),   # ldb = 4 mod 8
             ("kloop_bf16_col", 32, 16, 48, 56, 64, 0, True),
             ("chain_f16_row", 16, 32, 48, 48, 32, 0, True),
             ("kloop_k32_f16_col", 16, 32, 72, 72, 72, 0, True),  # 2 chunks a step, tail
             ("kloop_k32_f16_col", 16, 32, 64, 64, 68, 0, False)]


@pytest.mark.parametrize("hoist", [False, True], ids=["offsets", "hoisted"])
@pytest.mark.parametrize("case", SIM_CASES, ids=lambda c: f"{c[0]}-lda{c[4]}-ldb{c[5]}-off{c[6]}")
def test_interpreter_staged_equals_direct_and_oracle(tmp_path, case, monkeypatch, hoist):
    """Also with staging.HOIST_OFFSETS (the lane offsets before the run-time branch)."""
    monkeypatch.setattr(staging_mod, "HOIST_OFFSETS", hoist)
    name, m, n, k, lda, ldb, aoff, staged = case
    _, fmt, bl = CASES[name]
    ks = 32 if "k32" in name else 16
    kk = 48 if name.startswith("chain") else (k // ks) * ks      # the K the kernel consumes
    rng = np.random.default_rng(k + lda + ldb + aoff)
    a_bits, a_val = _exact_operand(rng, aoff + m * lda, fmt)
    b_bits, b_val = _exact_operand(rng, (k if bl == "row" else n) * ldb, fmt)
    av = a_val[aoff:].reshape(m, lda)[:, :kk]
    bv = b_val.reshape(k, ldb)[:kk, :n] if bl == "row" else b_val.reshape(n, ldb)[:, :kk].T
    c = rng.integers(-8, 8, (m, n)).astype(np.float32)
    want = (av @ bv + c).astype(np.float32)
    outs = {}
    for staging, pipelined in ((True, True), (True, False), (False, False)):
        monkeypatch.setattr(staging_mod, "PIPELINE", pipelined)
        path = tmp_path / f"s_{staging}.mettle"
        path.write_text(ALL)
        r = compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                            wmma_staging=staging))
        assert ("staged pipelined" in r.data.decode()) == pipelined
        sim = WmmaSim(r.objects, name)
        pad = np.full(m * n + 16, np.nan, np.float32)
        pad[:m * n] = c.ravel()
        tiles = (m // 16) * (n // 16)
        mem = sim.run((tiles + 3) // 4, 128, [
            ("buf", "a", a_bits), ("buf", "b", b_bits), ("buf", "c", pad), ("u32", m),
            ("u32", n), ("u32", k), ("u32", lda), ("u32", ldb), ("u32", aoff)])
        got = mem.read("c")
        assert np.isnan(got[m * n:]).all()
        outs[staging, pipelined] = got[:m * n].reshape(m, n)
        took = "staged" if staging and staged else "direct"
        assert sim.wmmas[took] > 0 and sim.wmmas["staged" if took == "direct" else "direct"] \
            == 0, (staging, sim.wmmas)
    assert {o.tobytes() for o in outs.values()} == {want.tobytes()}


# ---- pipelined form: the accumulator's other readers and neighbours ----------------------
TWO_TILES = """kernel(block = 128) two(a: uint16*, b: uint16*, c: float32*, m: int32, n: int32,
                          k: int32) {
  var tile: int32 = (int32)(block.x * 4 + thread.x / 32);
  var tiles_n: int32 = n / 32;
  if (tile >= (m / 16) * tiles_n) { return; }
  var tm: int32 = tile / tiles_n;
  var tn: int32 = tile % tiles_n;
  var acc: float32* = c + (int64)(tm * 16) * (int64)n + (int64)(tn * 32);
  var acc2: float32* = acc + (int64)16;
  var ar: uint16* = a + (int64)(tm * 16) * (int64)k;
  for kk in 0..k / 16 {
    MMA(acc, 0)
  }
  for kk in 0..k / 16 {
    MMA(acc2, 16)
  }
}
"""
_TWO_MMA = """tensor_mma(ar + (int64)(kk * 16),
               b + (int64)(kk * 16) * (int64)n + (int64)(tn * 32 + {o}),
               {acc}, {acc}, shape: m16n16k16,
               a_type: f16, b_type: f16, accumulator_type: f32, result_type: f32,
               a_layout: row, b_layout: row, c_layout: row, d_layout: row,
               lda: (uint32)k, ldb: (uint32)n, ldc: (uint32)n, ldd: (uint32)n);"""


def _two_tiles() -> str:
    src = TWO_TILES.replace("MMA(acc, 0)", _TWO_MMA.format(acc="acc", o=0))
    return src.replace("MMA(acc2, 16)", _TWO_MMA.format(acc="acc2", o=16))


def _run_forms(tmp_path, monkeypatch, src, kernel, m, n, k, extra=()):
    """C after `kernel` on the interpreter for the pipelined, synchronous and direct forms,
    with the PTX of each."""
    rng = np.random.default_rng(m + n + k)
    a_bits, a_val = _exact_operand(rng, m * k, "f16")
    b_bits, b_val = _exact_operand(rng, k * n, "f16")
    c = rng.integers(-8, 8, (m, n)).astype(np.float32)
    outs, ptxs = {}, {}
    for staging, pipelined in ((True, True), (True, False), (False, False)):
        monkeypatch.setattr(staging_mod, "PIPELINE", pipelined)
        path = tmp_path / "k.mettle"
        path.write_text(src)
        r = compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                            wmma_staging=staging))
        sim = WmmaSim(r.objects, kernel)
        pad = np.full(m * n + 16, np.nan, np.float32)
        pad[:m * n] = c.ravel()
        mem = sim.run(4, 128, [("buf", "a", a_bits), ("buf", "b", b_bits), ("buf", "c", pad),
                               ("u32", m), ("u32", n), ("u32", k), *extra])
        got = mem.read("c")
        assert np.isnan(got[m * n:]).all()
        outs[staging, pipelined] = got[:m * n].reshape(m, n)
        ptxs[staging, pipelined] = r.data.decode()
    want = (a_val.reshape(m, k) @ b_val.reshape(k, n) + c).astype(np.float32)
    return outs, ptxs, want


def test_interpreter_two_pipelined_groups(tmp_path, monkeypatch):
    """Two K loops, two resident groups: each gets its own two-stage area (8 KiB each, 16 KiB
    in all: the cap), so a step one group left pending can never share a slot with the
    other's copies."""
    outs, ptxs, want = _run_forms(tmp_path, monkeypatch, _two_tiles(), "two", 32, 64, 48)
    body = entry(ptxs[True, True], "two")
    assert body.count("staged pipelined") == 2
    assert len(set(re.findall(r"mov\.u32 %r\d+, (two_wmma_pipe\w*);", body))) == 2
    assert {o.tobytes() for o in outs.values()} == {want.tobytes()}


@pytest.mark.parametrize("floats", [0, 4096])
def test_later_groups_count_the_earlier_areas(tmp_path, ptxas_path, floats):
    """Two K loops at 256 work-items: the first group's 16 KiB pipelined area fills the
    staging cap, so the second keeps the direct loads rather than add an 8 KiB synchronous
    area (staging over 16 KiB, and with the kernel's own arrays over 48 KiB of static
    shared memory)."""
    src = _two_tiles().replace("kernel(block = 128)", "kernel(block = 256)")
    if floats:
        src = src.replace("  var tile: int32", _BIG_ARRAY.replace("N", str(floats)), 1)
    ptx, explain = compile_src(tmp_path, src)
    body = entry(ptx, "two")
    assert body.count("staged pipelined") == 1 and "two_wmma_stage" not in ptx
    assert re.search(r"// mtlc\.tensor_loop resident group=1 .* direct: the 16384 bytes of "
                     r"earlier groups' staging areas leave no room for a 8192-byte area "
                     r"under 16384 bytes$", body, re.M)
    shared = sum(int(n) for n in re.findall(r"^\.shared \.align \d+ \.b8 \w+\[(\d+)\];", ptx,
                                             re.M))
    assert shared == 16384 + 4 * floats <= staging_mod.STATIC_SHARED
    no_spills(ptxas_path, ptx, "sm_90a", tmp_path)


def test_interpreter_fused_epilogue_reads_the_settled_tile(tmp_path, monkeypatch):
    """A fused register epilogue reads the accumulator: the last copied step is multiplied
    before it (Group.registers settles), so all three forms agree bitwise."""
    from tests.tensor.residency_kernels import EPILOGUES, with_epilogue
    opts, params = EPILOGUES["relu_alpha"]
    outs, ptxs, want = _run_forms(tmp_path, monkeypatch,
                                  with_epilogue(opts, extra_params=params), "gemm_ep", 32, 32,
                                  48, extra=[("u32", f32_bits(-0.5))])
    body = entry(ptxs[True, True], "gemm_ep")
    assert "staged pipelined" in body and "mtlc.tensor_epilogue fused on resident" in body
    fused = body.index("mtlc.tensor_epilogue fused")
    assert body.index("cp.async.wait_group 0", fused) < body.index("mul.rn.f32", fused)
    scaled = np.float32(-0.5) * want
    relu = np.where(scaled < 0, np.float32(0), scaled)        # -0 stays -0, as selp keeps it
    assert {o.tobytes() for o in outs.values()} == {relu.tobytes()}


# ---- no declared block shape: areas sized for the tile index's subgroups, the launch tested
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80", "sm_121a"])
def test_undeclared_block_is_staged_with_a_launch_guard(tmp_path, ptxas_path, arch):
    """The plain-source K loop (no `block =`, tile = block.x * 4 + thread.x / 32) is staged
    for 4 subgroups: an 8 KiB two-stage area, the declared 128-item form's, the linear id
    and the block size from %tid/%ntid, and the subgroup's test (id past the areas, or a
    partial subgroup in the launch) folded into every update's run-time test; --explain
    states the form."""
    ptx, explain = compile_src(tmp_path, kloop("k1", block=False), gpu_arch=arch)
    body = entry(ptx, "k1")
    assert re.search(r"// mtlc\.tensor_loop resident group=0 .* staged pipelined "
                     r"launch-guarded subgroups<=4$", body, re.M)
    assert "no declared block shape: sized for 4 subgroups (the tile index block.x * 4 + " \
        "thread.x / 32), a run-time test loads directly in a subgroup past them or a " \
        "launch with a partial subgroup" in explain
    assert "operands loaded directly" not in explain
    assert re.search(r"\.shared \.align 128 \.b8 k1_wmma_pipe\d*\[8192\];", ptx)
    assert ".reqntid" not in body
    for d in "xyz":
        assert f"%ntid.{d};" in body and f"%tid.{d};" in body
    # unfit = (linear id >= 128) | (items & 31), or-ed into the alignment test's word
    past = re.search(r"setp\.ge\.u32 (%p\d+), %r\d+, 128;", body).group(1)
    unfit = re.search(rf"selp\.u32 (%r\d+), 1, 0, {re.escape(past)};", body).group(1)
    assert re.search(rf"or\.b32 (%r\d+), \1, {re.escape(unfit)};", body)
    assert re.search(r"@%p\d+ bra\.uni \$L__wmma_direct\d+;", body)
    assert body.count("cp.async.ca.shared.global") == 1
    no_spills(ptxas_path, ptx, arch, tmp_path)


def test_undeclared_block_synchronous_form(tmp_path, ptxas, monkeypatch):
    monkeypatch.setattr(staging_mod, "PIPELINE", False)
    ptx, explain = compile_src(tmp_path, kloop("k1", block=False))
    body = entry(ptx, "k1")
    assert re.search(r"staged launch-guarded subgroups<=4 sync: pipelining off$", body, re.M)
    assert "no declared block shape: sized for 4 subgroups" in explain
    assert re.search(r"\.shared \.align 128 \.b8 k1_wmma_stage\d*\[4096\];", ptx)
    ptxas(ptx, "sm_90a")


_TILE = "(int32)(block.x * 4 + thread.x / 32)"


@pytest.mark.parametrize("index,subgroups,why", [
    ("(int32)(block.x * 8 + thread.x / 32)", 8, "the tile index block.x * 8 + thread.x / 32"),
    ("(int32)(thread.x / 32 + 2 * block.x)", 2, "the tile index block.x * 2 + thread.x / 32"),
    ("(int32)(block.x * 4 + (thread.x >> 5))", 4, "the tile index block.x * 4"),
    ("(int32)(block.x * 16 + thread.x / 32)", 8,
     "the tile index block.x * 16 + thread.x / 32, capped at 8"),
    ("(int32)(block.x * (block_dim.x / 32) + thread.x / 32)", 4,
     "no subgroup count in the tile index: the default"),
])
def test_undeclared_areas_are_sized_from_the_tile_index(tmp_path, ptxas, index, subgroups,
                                                         why):
    """What the compiler can know of an undeclared block: the subgroup count the kernel's
    own tile index names, else UNDECLARED_ITEMS; capped at the 16 KiB pipelined area."""
    ptx, explain = compile_src(tmp_path, kloop("k1", block=False).replace(_TILE, index, 1))
    body = entry(ptx, "k1")
    assert f" staged pipelined launch-guarded subgroups<={subgroups}\n" in body
    assert re.search(rf"\.shared \.align 128 \.b8 k1_wmma_pipe\d*\[{subgroups * 2048}\];",
                     ptx)
    assert re.search(rf"setp\.ge\.u32 %p\d+, %r\d+, {subgroups * 32};", body)
    assert f"sized for {subgroups} subgroups ({why}" in explain
    ptxas(ptx, "sm_90a")


def _loop_ops(ptx: str, name: str) -> list[str]:
    """The opcodes of the K loop's body (loop.body up to the back edge), registers aside."""
    body = entry(ptx, name)
    loop = body[body.index("// loop.body"):body.rindex("bra.uni")]
    ops = []
    for line in loop.splitlines()[1:]:
        words = line.split()
        if words and not words[0].endswith(":"):
            ops.append("@p " + words[1] if words[0].startswith("@") else words[0])
    return ops


def test_undeclared_k_loop_matches_the_declared_one(tmp_path):
    """bench/kernels/kloop_held.mettle (no block shape) against plain.mettle's gemm_kloop
    (`block = 128`), both -O: the same area size and the same K loop but for one `or` (the
    launch test joining the alignment test's word), so the staged forms differ only in the
    launch test, never in what the loop does per K step."""
    root = Path(__file__).resolve().parents[2] / "bench" / "kernels"
    held = compile_file(str(root / "kloop_held.mettle"),
                        Options(emit="ptx", gpu_arch="sm_90a", optimize=True)).data.decode()
    plain = compile_file(str(root / "plain.mettle"),
                         Options(emit="ptx", gpu_arch="sm_90a", optimize=True)).data.decode()
    area = re.compile(r"\.shared \.align 128 \.b8 (\w+)_wmma_pipe\[(\d+)\];")
    sizes = {n: int(b) for n, b in area.findall(held + plain)}
    assert sizes["gemm_kloop_held"] == sizes["gemm_kloop"] == 8192
    ops_held, ops_decl = _loop_ops(held, "gemm_kloop_held"), _loop_ops(plain, "gemm_kloop")
    extra = list(ops_held)
    extra.remove("or.b32")
    assert extra == ops_decl
    assert ops_held.count("or.b32") == ops_decl.count("or.b32") + 1


def test_hoisted_offsets_precede_the_branch(tmp_path, monkeypatch):
    """staging.HOIST_OFFSETS: each operand's lane offset (row * ld * 2 + half) is computed
    before the update's run-time branch, and the staged branch only adds it to the tile's
    address; off, the branch computes it (the default's PTX)."""
    forms = {}
    for hoist in (False, True):
        monkeypatch.setattr(staging_mod, "HOIST_OFFSETS", hoist)
        body = entry(compile_src(tmp_path, kloop("k1"))[0], "k1")
        loop = body[body.index("// loop.body"):]
        branch = loop.index("bra.uni $L__wmma_direct")
        staged = loop[branch:loop.index("cp.async.ca")]
        forms[hoist] = (loop[:branch].count("mul.wide.u32"), staged.count("mul.wide.u32"))
    assert forms == {False: (0, 2), True: (2, 0)}


# (block, staged subgroups per block): the first 4 subgroups of a block stage (the areas'
# count: kloop_launch's tile index names none), the rest load directly
LAUNCHES = [(128, 4), (256, 4), (64, 2), (512, 4)]


@pytest.mark.parametrize("block,staged", LAUNCHES, ids=lambda v: str(v))
def test_interpreter_undeclared_block_staged_equals_direct(tmp_path, monkeypatch, block,
                                                           staged):
    """Each launch block size: pipelined, synchronous and unstaged forms give the oracle's
    bits, and the staged form's fragments come from .shared exactly in the subgroups the
    areas serve (a larger block mixes the two forms)."""
    m, n, k, lda, ldb = 32, 64, 48, 48, 64
    rng = np.random.default_rng(block)
    a_bits, a_val = _exact_operand(rng, m * lda, "f16")
    b_bits, b_val = _exact_operand(rng, k * ldb, "f16")
    c = rng.integers(-8, 8, (m, n)).astype(np.float32)
    want = (a_val.reshape(m, lda) @ b_val.reshape(k, ldb) + c).astype(np.float32)
    tiles = (m // 16) * (n // 16)
    outs = {}
    for staging, pipelined in ((True, True), (True, False), (False, False)):
        monkeypatch.setattr(staging_mod, "PIPELINE", pipelined)
        path = tmp_path / "u.mettle"
        path.write_text(kloop_launch())
        r = compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                            wmma_staging=staging))
        sim = WmmaSim(r.objects, "kloop_launch")
        pad = np.full(m * n + 16, np.nan, np.float32)
        pad[:m * n] = c.ravel()
        mem = sim.run((tiles * 32 + block - 1) // block, block, [
            ("buf", "a", a_bits), ("buf", "b", b_bits), ("buf", "c", pad), ("u32", m),
            ("u32", n), ("u32", k), ("u32", lda), ("u32", ldb), ("u32", 0)])
        got = mem.read("c")
        assert np.isnan(got[m * n:]).all()
        outs[staging, pipelined] = got[:m * n].reshape(m, n)
        # subgroups that own a tile, per block: staged ones read .shared, the rest global
        per_block = [min(block // 32, tiles - b * (block // 32))
                     for b in range((tiles * 32 + block - 1) // block)]
        want_staged = sum(min(s, staged) for s in per_block) if staging else 0
        want_direct = sum(per_block) - want_staged
        assert sim.wmmas["staged"] // (32 * (k // 16)) == want_staged, (block, sim.wmmas)
        assert sim.wmmas["direct"] // (32 * (k // 16)) == want_direct, (block, sim.wmmas)
    assert {o.tobytes() for o in outs.values()} == {want.tobytes()}
