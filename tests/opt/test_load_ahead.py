"""load-ahead (opt/load_ahead.py): loops the assembler keeps rolled, unrolled with their
loads issued first under a run-time no-overlap test.

The exactness property runs loops that load and store through one buffer at element
distances on both sides of the test's window (in place, just overlapping, far apart),
with several steps, starts and trip counts, through the IR interpreter before and after the
pass: memory must come out byte-identical, and the unrolled group must run exactly when
the distances allow it. Golden IR lives in tests/opt/cases/load_ahead_rows.ir.
"""
from __future__ import annotations

import pytest

from toolchain.compiler.ir import verify_function
from toolchain.compiler.ir.reader import parse_module
from toolchain.compiler.opt import load_ahead
from toolchain.compiler.opt.analyses import Analyses, TargetInfo
from toolchain.compiler.opt.manager import PASSES
from tests.opt.interp import Machine

PTX = TargetInfo(32, "ptx", True)

# %x is the buffer; %y = %x + %d and %z = %x + %d2 elements; the loop runs i = lane, lane +
# STEP, ... while i < n. BODY is one of the bodies below (i32 elements).
TEMPLATE = """\
function @f(%x: ptr<i32>, %d: i64, %d2: i64, %n: i32, %lane: i32) -> void {{
entry:
  %y = ptradd ptr<i32> %x, %d
  %z = ptradd ptr<i32> %x, %d2
  br loop.cond
loop.cond:
  %i = phi i32 [%lane, entry], [%next, loop.body]
  %c = cmp bool %i, %n {{pred=lt}}
  cbr %c, loop.body, loop.end
loop.body:
  %w = convert i64 %i
{body}
  %next = add i32 %i, {step}:i32
  br loop.cond
loop.end:
  ret
}}
"""
BODIES = {
    # load, then store (a store overtakes loads of later copies only)
    "load_store": """\
  %px = ptradd ptr<i32> %x, %w
  %v = load i32 %px
  %v3 = mul i32 %v, 3:i32
  %v4 = add i32 %v3, 1:i32
  %py = ptradd ptr<i32> %y, %w
  store %py, %v4""",
    # store, then a load of the same iteration (the load moves above its own copy's store)
    "store_load": """\
  %py = ptradd ptr<i32> %y, %w
  %t = mul i32 %i, 7:i32
  store %py, %t
  %px = ptradd ptr<i32> %x, %w
  %v = load i32 %px
  %pz = ptradd ptr<i32> %z, %w
  store %pz, %v""",
    # an update in place: the store writes where the load read
    "in_place": """\
  %px = ptradd ptr<i32> %x, %w
  %v = load i32 %px
  %v3 = mul i32 %v, 3:i32
  store %px, %v3""",
    # two loads, one store; byte offsets through a shared i*4 (what index-scale makes)
    "two_loads": """\
  %o = mul i64 %w, 4:i64
  %px = byteadd ptr<i32> %x, %o
  %a = load i32 %px
  %pz = byteadd ptr<i32> %z, %o
  %b = load i32 %pz
  %s = add i32 %a, %b
  %py = byteadd ptr<i32> %y, %o
  store %py, %s""",
}

CELLS = 4000              # buffer elements; %x sits at BASE so %d may be negative
BASE = 1000


def build(body: str, step: int):
    m = parse_module(TEMPLATE.format(body=BODIES[body], step=step))
    fn = m.functions["f"]
    verify_function(fn, ssa=True)
    return m, fn


def optimize(m, fn, passes=("load-ahead",)) -> bool:
    an = Analyses(fn, m, gpu=True, target=PTX)
    changed = False
    for name in passes:
        p = PASSES[name]
        if p.run(fn, an):
            an.after_pass(p.invalidates)
            changed = True
        verify_function(fn, ssa=True)
    return changed


# 16 bytes of null page, then the buffer's initial contents, then slack
MEMORY = bytes(16) + b"".join(((k * 2654435761) & 0x7FFFFFFF).to_bytes(4, "little")
                              for k in range(CELLS)) + bytes(64)


class Tracer(Machine):
    """The interpreter, remembering which blocks ran."""

    def __init__(self):
        super().__init__(bytearray(MEMORY), fuel=2_000_000)
        self.blocks: set[str] = set()

    def exec(self, ins, a):
        self.blocks.add(ins.block.name)
        return super().exec(ins, a)


def execute(fn, d: int, d2: int, n: int, lane: int):
    m = Tracer()
    m.call(fn, [16 + 4 * BASE, d, d2, n, lane])
    return bytes(m.mem), m.blocks


def main_ran(blocks: set[str]) -> bool:
    return any(".r0" in b for b in blocks)


U = load_ahead.STORE_FACTOR
DISTANCES = sorted({0, 1, -1, 5, -40, 31, 32, 33, 64, 100, 200, 300, 479, 480, 481,
                    U * 32, U * 32 + 1, 700, -700})


@pytest.mark.parametrize("body", sorted(BODIES))
@pytest.mark.parametrize("step", [1, 3, 32])
def test_results_are_unchanged_for_every_distance(body, step):
    m, fn = build(body, step)
    _, original = build(body, step)
    assert optimize(m, fn)
    took_main = 0
    for d in DISTANCES:
        for n, lane in ((0, 0), (37, 3), (300, 5), (900, 0))[:4 if step > 1 else 3]:
            d2 = -d - 3 if body != "two_loads" else d // 2 - 7
            want, _ = execute(original, d, d2, n, lane)
            got, blocks = execute(fn, d, d2, n, lane)
            assert got == want, f"{body} step {step}: d={d} d2={d2} n={n} lane={lane}"
            took_main += main_ran(blocks)
    assert took_main, "the unrolled group never ran"


def test_group_runs_exactly_outside_the_window():
    """load_store, step 32: a store may land on a later copy's load only for distances of
    1..U-1 iterations (32..(U-1)*32 elements, plus the partial overlaps around them); the
    test admits everything else, in-place updates included."""
    m, fn = build("load_store", 32)
    optimize(m, fn)
    A, w = 32 * 4, 4
    for d in range(-40, U * 32 + 40):
        e = 4 * d
        _, blocks = execute(fn, d, 0, 600, 0)
        assert main_ran(blocks) == (e <= A - w or e >= A * (U - 1) + w), d


def test_a_same_iteration_store_before_a_load_blocks_in_place():
    """store_load writes y[i] then reads x[i]: with y == x the load must stay after it."""
    m, fn = build("store_load", 1)
    optimize(m, fn)
    _, blocks = execute(fn, 0, 500, 200, 0)
    assert not main_ran(blocks)
    _, blocks = execute(fn, -1, 500, 200, 0)
    assert main_ran(blocks)


def test_pointer_induction_variables_after_iv_reduce():
    m, fn = build("load_store", 1)
    _, original = build("load_store", 1)
    assert optimize(m, fn, ("iv-reduce", "load-ahead"))
    assert any(i.op == "phi" and i.type.is_ptr for i in fn.instructions())
    for d in (-3, 0, 1, 8, 15, 16, 17, 40):
        want, _ = execute(original, d, 0, 200, 0)
        got, _ = execute(fn, d, 0, 200, 0)
        assert got == want, d


def test_refusals_are_explained_and_leave_the_loop():
    text = TEMPLATE.format(step=32, body="""\
  %px = ptradd ptr<i32> %x, %w
  %v = load i32 %px
  %vw = convert i64 %v
  %py = ptradd ptr<i32> %y, %vw
  store %py, %v""")
    m = parse_module(text)
    fn = m.functions["f"]
    assert not optimize(m, fn)
    assert "load-ahead: loop with stores left rolled: the address of a store is not affine " \
           "in the induction variable" in m.remarks.format()


def test_other_targets_and_unit_stride_load_loops_are_left_alone():
    m, fn = build("load_store", 32)
    an = Analyses(fn, m, gpu=True, target=TargetInfo(None, "spirv", False))
    assert not PASSES["load-ahead"].run(fn, an)
    text = TEMPLATE.format(step=1, body="""\
  %px = ptradd ptr<i32> %x, %w
  %v = load i32 %px""")
    m = parse_module(text)
    assert not optimize(m, m.functions["f"])      # ptxas unrolls it x4 itself
    m = parse_module(text.replace("1:i32", "32:i32"))
    assert optimize(m, m.functions["f"])
    assert "load-ahead: loop unrolled x8 with a run-time trip count: the 8 loads of a " \
           "group issue first" in m.remarks.format()


ROWS = """\
kernel(block = 128) norm(x: float32*, y: float32*, rows: int32, cols: int32) {
  var row: int32 = (int32)(block.x * 4 + thread.x / 32);
  if (row >= rows) { return; }
  var lane: int32 = (int32)subgroup_local_id();
  var xr: float32* = x + (int64)row * (int64)cols;
  var yr: float32* = y + (int64)row * (int64)cols;
  var m: float32 = -3.0e38;
  for (var c: int32 = lane; c < cols; c += (int32)subgroup_size()) {
    if (xr[c] > m) { m = xr[c]; }
  }
  m = subgroup_reduce_max(m);
  for (var c: int32 = lane; c < cols; c += (int32)subgroup_size()) {
    yr[c] = xr[c] - m;
  }
}
"""


def test_ptx_issues_a_groups_loads_before_its_stores(tmp_path, ptxas, monkeypatch):
    from toolchain.compiler.driver import Options, compile_file
    from toolchain.compiler.opt import reread
    monkeypatch.setattr(reread, "STREAM", False)      # its policy: the test below
    src = tmp_path / "rows.mettle"
    src.write_text(ROWS)
    out = compile_file(str(src), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                         explain=True))
    ptx = out.data.decode()
    ptxas(ptx, "sm_90a")
    # the unrolled store loop is the block with 16 stores: every load comes first
    blocks = ptx.split("$L__BB")
    group = next(b for b in blocks if b.count("st.global.f32") == U)
    lines = group.splitlines()
    # both loops read xr: their loads carry the reread hint (opt/reread.py)
    loads = [k for k, l in enumerate(lines) if "ld.global.L1::evict_last.f32" in l]
    stores = [k for k, l in enumerate(lines) if "st.global.f32" in l]
    assert len(loads) == U and max(loads) < min(stores)
    assert any(b.count("ld.global.L1::evict_last.f32") == load_ahead.LOAD_FACTOR and
               "st.global" not in b for b in blocks)
    assert "ld.global.f32" not in ptx
    assert "norm: line 12: load-ahead: loop with stores unrolled x16: the 16 loads of a " \
           "group issue before its stores; run-time test: 1 store/load pair(s) do not " \
           "overlap within a group, else the original loop runs" in out.explain.splitlines()
    assert "norm: line 8: load-ahead: loop unrolled x8 with a run-time trip count: the 8 " \
           "loads of a group issue first" in out.explain.splitlines()


def test_a_generic_store_beside_a_global_load_is_left_rolled():
    """A generic pointer may hold a workgroup address, whose distance to a global one
    means nothing: no test can be formed, so the loop stays as it is."""
    text = TEMPLATE.format(step=32, body="""\
  %px = ptradd ptr<i32, global> %g, %w
  %v = load i32 %px
  %py = ptradd ptr<i32> %y, %w
  store %py, %v""").replace("(%x: ptr<i32>,", "(%g: ptr<i32, global>, %x: ptr<i32>,")
    m = parse_module(text)
    fn = m.functions["f"]
    assert not optimize(m, fn)
    assert "load-ahead: loop with stores left rolled: a store and a load in different " \
           "address spaces may alias" in m.remarks.format()


def _random_body(r) -> str:
    """1-3 loads and 1-2 stores in random order through %x/%y/%z at small constant element
    offsets of the index, each store writing a sum of what was loaded so far (or i)."""
    lines, loaded, n = ["  %w0 = convert i64 %i"], [], 0
    ops = ["load"] * r.randint(1, 3) + ["store"] * r.randint(1, 2)
    r.shuffle(ops)
    for op in ops:
        n += 1
        base = r.choice(["%x", "%y", "%z"])
        lines.append(f"  %o{n} = add i64 %w0, {r.randint(-3, 3)}:i64")
        lines.append(f"  %p{n} = ptradd ptr<i32> {base}, %o{n}")
        if op == "load":
            lines.append(f"  %v{n} = load i32 %p{n}")
            loaded.append(f"%v{n}")
        else:
            val = "%i"
            for v in loaded:
                lines.append(f"  %s{n}{v[1:]} = add i32 {val}, {v}")
                val = f"%s{n}{v[1:]}"
            lines.append(f"  store %p{n}, {val}")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(12))
def test_random_bodies_keep_their_results(seed):
    import random
    r = random.Random(seed)
    body, step = _random_body(r), r.choice([1, 2, 32])
    text = TEMPLATE.format(step=step, body=body).replace("  %w = convert i64 %i\n", "")
    m = parse_module(text)
    fn, original = m.functions["f"], parse_module(text).functions["f"]
    if not optimize(m, fn):
        pytest.skip("load-ahead left this body alone: " + m.remarks.format())
    for _ in range(8):
        d, d2 = r.randint(-70, 600), r.randint(-70, 600)
        n, lane = r.choice([0, 9, 200, 700]), r.randint(0, 4)
        want, _ = execute(original, d, d2, n, lane)
        got, _ = execute(fn, d, d2, n, lane)
        assert got == want, f"seed {seed}: d={d} d2={d2} n={n} lane={lane}\n{text}"


# opt/reread.py's access policy (STREAM, off by default until timed on the H200): the last
# loop to read a re-read base reads it evict-first, output stores stream.
BRANCHES = """\
kernel(block = 32) pick(x: float32*, y: float32*, n: int32, flag: int32) {
  var lane: int32 = (int32)subgroup_local_id();
  var s: float32 = 0.0;
  if (flag > 0) {
    for (var c: int32 = lane; c < n; c += 32) { s = s + x[c]; }
  } else {
    for (var c: int32 = lane; c < n; c += 32) { s = s - x[c]; }
  }
  for (var c: int32 = lane; c < n; c += 32) { y[c] = x[c] * s; }
  for (var k: int32 = 0; k < 4; k += 1) {
    for (var c: int32 = lane; c < n; c += 32) { y[c] = x[c] + y[c]; }
    for (var c: int32 = lane; c < n; c += 32) { s = s + y[c]; }
  }
  y[lane] = s;
}
"""


def _policy_ptx(tmp_path, source, stream, explain=False):
    from toolchain.compiler.driver import Options, compile_file
    from toolchain.compiler.opt import reread
    src = tmp_path / "k.mettle"
    src.write_text(source)
    saved = reread.STREAM
    reread.STREAM = stream
    try:
        return compile_file(str(src), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                              explain=explain))
    finally:
        reread.STREAM = saved


def test_stream_policy_marks_the_last_pass_and_the_output(tmp_path, ptxas):
    """ROWS: the max loop keeps the reread hint; the second loop is the row's last read
    (evict-first) and its stores go to a base no loop reads (streaming)."""
    out = _policy_ptx(tmp_path, ROWS, True, explain=True)
    ptx = out.data.decode()
    ptxas(ptx, "sm_90a")
    blocks = ptx.split("$L__BB")
    group = next(b for b in blocks if b.count("st.global.cs.f32") == U)
    assert group.count("ld.global.cs.f32") == U and "evict_last" not in group
    assert any(b.count("ld.global.L1::evict_last.f32") == load_ahead.LOAD_FACTOR
               for b in blocks)
    assert "ld.global.f32" not in ptx and "st.global.f32" not in ptx
    lines = out.explain.splitlines()
    assert "norm: line 8: load-ahead: 1 load(s) marked reread: another loop reads the same " \
           "base (kept in L1 on PTX)" in lines
    assert "norm: line 12: load-ahead: 1 load(s) marked last read: no loop reads the base " \
           "after this one (evict-first on PTX)" in lines
    assert "norm: line 12: load-ahead: 1 store(s) marked streaming: no loop reads their " \
           "base, and the function re-reads rows (evict-first on PTX)" in lines
    # off (the default): every pass keeps the reread hint, stores stay plain
    off = _policy_ptx(tmp_path, ROWS, False).data.decode()
    assert ".cs." not in off and "st.global.f32" in off


def test_stream_policy_needs_no_later_reader(tmp_path, ptxas):
    """Loops in two branches before the third: the third is the last read of x only if no
    loop reading x can follow it; the nest after it re-reads x (and y) every outer trip, so
    nothing there is a last read, and y, read by a loop, is no streaming output."""
    out = _policy_ptx(tmp_path, BRANCHES, True, explain=True)
    ptx = out.data.decode()
    ptxas(ptx, "sm_90a")
    assert ".cs." not in ptx
    text = "\n".join(out.explain.splitlines())
    assert "last read" not in text and "streaming" not in text
    nest = BRANCHES[:BRANCHES.index("  for (var k")] + "  y[lane] = s;\n}\n"
    out = _policy_ptx(tmp_path, nest, True, explain=True)
    lines = out.explain.splitlines()
    assert "pick: line 9: load-ahead: 1 load(s) marked last read: no loop reads the base " \
           "after this one (evict-first on PTX)" in lines
    for line in (5, 7):
        assert f"pick: line {line}: load-ahead: 1 load(s) marked reread: another loop reads " \
               "the same base (kept in L1 on PTX)" in lines
    assert "pick: line 9: load-ahead: 1 store(s) marked streaming: no loop reads their " \
           "base, and the function re-reads rows (evict-first on PTX)" in lines
    ptxas(out.data.decode(), "sm_90a")


# Phis that carry values between copies: %a takes %b's value (a rotation), %b the loaded
# value, %s a running sum read after the loop, %dead nothing reads.
CARRIED = TEMPLATE.format(step=1, body="""\
  %px = ptradd ptr<i32> %x, %w
  %v = load i32 %px
  %t = mul i32 %v, %a
  %py = ptradd ptr<i32> %y, %w
  store %py, %t
  %s2 = add i32 %s, %t""").replace("""\
  %i = phi i32 [%lane, entry], [%next, loop.body]
""", """\
  %i = phi i32 [%lane, entry], [%next, loop.body]
  %b = phi i32 [11:i32, entry], [%v, loop.body]
  %a = phi i32 [7:i32, entry], [%b, loop.body]
  %s = phi i32 [0:i32, entry], [%s2, loop.body]
  %dead = phi i64 [0:i64, entry], [%w, loop.body]
""").replace("""\
loop.end:
  ret
""", """\
loop.end:
  store %z, %s
  %z1 = ptradd ptr<i32> %z, 1:i64
  store %z1, %a
  %z2 = ptradd ptr<i32> %z, 2:i64
  store %z2, %b
  ret
""")


def test_values_carried_between_copies_keep_their_results():
    m = parse_module(CARRIED)
    fn, original = m.functions["f"], parse_module(CARRIED).functions["f"]
    assert optimize(m, fn)
    took_main = 0
    for d in (-700, -1, 0, 1, 40, 700):
        for n, lane in ((0, 0), (1, 0), (2, 1), (17, 0), (300, 5), (900, 0)):
            want, _ = execute(original, d, -900, n, lane)
            got, blocks = execute(fn, d, -900, n, lane)
            assert got == want, f"d={d} n={n} lane={lane}"
            took_main += main_ran(blocks)
    assert took_main, "the unrolled group never ran"


def test_accesses_of_one_address_share_each_copys_increment():
    """The load and the store of an update in place read one address per copy; a load
    hoisted above a store of its address gets its own (the store's is built below it)."""
    m, fn = build("in_place", 32)
    assert optimize(m, fn)
    group = next(b for b in fn.blocks if b.name.endswith(".r0"))
    assert sum(i.op == "byteadd" for i in group.instrs) == U - 1
    text = TEMPLATE.format(step=32, body=STORE_RELOAD)
    m = parse_module(text)
    fn, original = m.functions["f"], parse_module(text).functions["f"]
    assert optimize(m, fn)                # verified: every address is defined before use
    group = next(b for b in fn.blocks if b.name.endswith(".r0"))
    assert sum(i.op == "byteadd" for i in group.instrs) == 3 * (U - 1)
    for d in (-700, 0, 700):              # (the run-time test keeps the group from running)
        assert execute(fn, d, 900, 600, 0)[0] == execute(original, d, 900, 600, 0)[0]


# a store, then a load of the same address: its group never runs (the load would move
# above the store it reads), but is built, so it must be well formed
STORE_RELOAD = """\
  %py = ptradd ptr<i32> %y, %w
  %t = mul i32 %i, 7:i32
  store %py, %t
  %v = load i32 %py
  %pz = ptradd ptr<i32> %z, %w
  store %pz, %v"""


def _fixpoint_after(text: str) -> tuple[bool, str]:
    """simplify-cfg, then load-ahead: whether simplify-cfg's fixpoint stands, and the
    function after load-ahead alone (to compare with a forced simplify-cfg run)."""
    from toolchain.compiler.ir.printer import format_function
    m = parse_module(text)
    fn = m.functions["f"]
    an = Analyses(fn, m, gpu=True, target=PTX)
    PASSES["simplify-cfg"].run(fn, an)
    assert an.at_fixpoint("simplify-cfg")
    assert PASSES["load-ahead"].run(fn, an)
    an.after_pass(PASSES["load-ahead"].invalidates)
    return an.at_fixpoint("simplify-cfg"), format_function(fn)


def test_simplify_cfg_is_skipped_only_when_it_has_nothing_to_do():
    from toolchain.compiler.ir.printer import format_function
    for text, trivial in ((CARRIED, False),
                          (CARRIED.replace("[%v, loop.body]", "[%a, loop.body]"), True)):
        kept, before = _fixpoint_after(text)
        assert kept == (not trivial)
        fn = parse_module(before).functions["f"]
        changed = PASSES["simplify-cfg"].run(fn, Analyses(fn, None, gpu=True, target=PTX))
        assert changed == trivial         # %a and %b swap: after 16 copies %a is itself
        if not trivial:
            assert format_function(fn) == before
