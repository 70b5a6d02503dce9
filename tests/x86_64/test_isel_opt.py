"""x86-64 selection under -O (bench/host_speed.py's causes, kept fixed): loop values in
registers with no frame traffic inside loops, rotated loops (one conditional branch per
iteration), addresses folded into [base + index*scale],
floats in xmm registers, division by a constant as a multiply (every width and sign,
checked by running against Python's arithmetic), and a tail self-call as a jump (a
recursion ten million deep runs in constant stack)."""
from __future__ import annotations

from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.opt.manager import optimize
from toolchain.compiler.targets.x86_64.assembler import Assembler
from toolchain.compiler.targets.x86_64.isel import FunctionSelector
from toolchain.compiler.targets.x86_64.operands import Mem
from toolchain.compiler.targets.x86_64.regs import RBP, Reg
from toolchain.compiler.targets.common.host import CStrings

from tests.host.support import build, run

MATMUL = """
fn matmul(a: float64*, b: float64*, c: float64*, n: int64) {
    for i in 0..n {
        for j in 0..n {
            var s: float64 = 0.0;
            for k in 0..n { s = s + a[i * n + k] * b[k * n + j]; }
            c[i * n + j] = s;
        }
    }
}
fn main() -> int32 { return 0; }
"""


def _select(tmp_path, source, name):
    """{block label: [(mnemonic, operands)]} of function `name` at -O, and the function."""
    src = tmp_path / "p.mettle"
    src.write_text(source)
    module, _ = compile_to_ir(str(src), gpu=False)
    optimize(module, gpu=False)
    fn = next(f for f in module.functions.values() if f.name == name)
    asm = Assembler()
    sel = FunctionSelector(asm, module, CStrings(), allocate=True)
    by_label, current = {}, ["prologue"]
    emit, label = asm.emit, asm.label

    def rec_emit(mn, *ops):
        by_label.setdefault(current[0], []).append((mn, ops))
        return emit(mn, *ops)

    def rec_label(name_):
        current[0] = name_
        return label(name_)
    asm.emit, asm.label = rec_emit, rec_label
    sel.select(fn)
    return {lab: by_label.get(lab, []) for lab in by_label}, sel, fn


def test_the_inner_loop_of_matmul_touches_no_frame_slot(tmp_path):
    code, sel, fn = _select(tmp_path, MATMUL, "matmul")
    body_block = next(b for b in fn.blocks if any(
        i.op == "add" and i.type.is_float for i in b.instrs))
    header = body_block.instrs[-1].targets[0]        # the k loop: header + body
    inner = [sel.labels[id(header)], sel.labels[id(body_block)]]
    body = [i for lab in inner for i in code[lab]]
    for mn, ops in body:
        assert not any(isinstance(o, Mem) and o.base == RBP for o in ops), (mn, ops)
        assert not (mn == "mov" and len(ops) == 2 and ops[0] == ops[1]), (mn, ops)
    mems = [o for mn, ops in body if mn != "lea" for o in ops if isinstance(o, Mem)]
    assert len(mems) == 2 and all(m.index is not None and m.scale == 8 for m in mems), mems
    assert any(mn == "addsd" and all(isinstance(o, Reg) for o in ops) for mn, ops in body)
    assert not any(mn in ("movq", "movd") for mn, _ in body)    # no float through a GPR
    assert len(body) <= 13, body
    latch = code[sel.labels[id(body_block)]]          # rotated: one conditional branch back
    assert not any(mn == "jmp" for mn, _ in latch), latch
    assert latch[-1][0] == "jl" and latch[-1][1][0].name == sel.labels[id(body_block)]


DIVISORS = [2, 3, 5, 7, 10, 16, 100, 641, 1000, 65535, 1 << 20, 2147483647, 4294967297,
            12345678901, (1 << 62) + 3]
SAMPLES = [0, 1, 2, 3, 7, 99, 1000, 65535, 123456789, 2147483647, 4294967295,
           9223372036854775807, -1, -2, -7, -1000, -2147483648, -9223372036854775807,
           -9223372036854775808, 6364136223846793005, -6364136223846793005]
TYPES = [(8, True), (8, False), (16, True), (16, False), (32, True), (32, False),
         (64, True), (64, False)]


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _tname(bits, signed):
    return f"{'int' if signed else 'uint'}{bits}"


def test_division_by_constants_matches_exact_arithmetic(tmp_path):
    lines, expect = ["import \"std/io\";"], []
    calls = []
    for bits, signed in TYPES:
        t = _tname(bits, signed)
        divs = sorted({_wrap(d * s, bits, signed) for d in DIVISORS for s in (1, -1)
                       if _wrap(d * s, bits, signed) not in (0, 1, -1)})
        for k, d in enumerate(divs):
            lines.append(f"fn q_{t}_{k}(x: {t}) -> {t} {{ return x / ({t}){d}; }}")
            lines.append(f"fn r_{t}_{k}(x: {t}) -> {t} {{ return x % ({t}){d}; }}")
            for x in sorted({_wrap(s, bits, signed) for s in SAMPLES}):
                if signed and d == -1:
                    continue
                q = abs(x) // abs(d) * (1 if (x < 0) == (d < 0) else -1)
                r = x - q * d
                calls.append(f"    println_int((int64)q_{t}_{k}(({t}){x}));")
                calls.append(f"    println_int((int64)r_{t}_{k}(({t}){x}));")
                expect += [_wrap(q, bits, signed), _wrap(r, bits, signed)]
    lines.append("fn main() -> int32 {\n" + "\n".join(calls) + "\n    return 0;\n}")
    exe = build(tmp_path, "\n".join(lines), "divs", ["-O"])
    out = run(exe)
    assert out.returncode == 0, out.stderr
    got = [int(x) for x in out.stdout.split()]
    assert got == [v if v < (1 << 63) else v - (1 << 64) for v in expect]


TAIL = """
import "std/io";
fn count(n: int64, acc: int64) -> int64 {
    if (n == 0) { return acc; }
    return count(n - 1, acc + 2);
}
fn halve(x: float64, k: int32) -> float64 {
    if (k == 0) { return x; }
    return halve(x * 0.5, k - 1);
}
fn main() -> int32 {
    println_int(count(10000000, 1));
    println_int((int64)(halve(1048576.0, 20)));
    return 0;
}
"""


def test_a_tail_self_call_runs_in_constant_stack(tmp_path):
    code, _, _ = _select(tmp_path, TAIL, "count")
    assert not any(mn == "call" for ops in code.values() for mn, _ in ops)
    exe = build(tmp_path, TAIL, "tail", ["-O"])
    out = run(exe)
    assert (out.returncode, out.stdout.split()) == (0, ["20000001", "1"]), out.stderr


SEED12 = """
import "std/io";
struct S1 { f0: uint16; f1: float32; f2: uint64; a0: uint64[2]; }
fn main() -> int32 {
    var s8: S1;
    var v9: float64 = ((float64)s8.a0[(18446744073709551615) & 1]);
    var s10: S1;
    print_int(s8.a0[(1) & 1]); newline();
    return 0;
}
"""


def test_difftest_seed12_a_ptradd_before_a_branch_compiles(tmp_path):
    """Found by `python3 -m tools.difftest --seeds 0:150` (seed 12): address folding looked
    at the operands of the instruction after a ptradd even when it had none (here the
    alloca of `s10`: an internal error at -O)."""
    out = run(build(tmp_path, SEED12, "seed12", ["-O"]))
    assert (out.returncode, out.stdout.split()) == (0, ["0"]), out.stderr


EARLY = """
import "std/io";
fn fib(n: int64) -> int64 { if (n < 2) { return n; } return fib(n - 1) + fib(n - 2); }
fn narrow(a: int8, b: int8) -> int8 {
    if (a < b) { return a * b - 3; }
    return narrow(a - 7, b) + 1;
}
fn wide(a: uint16, b: uint32) -> uint32 {
    if (b == 0) { return b; }
    return wide(a, b - 1) + (uint32)a;
}
fn fourth(a: int64, b: int64, c: int64, d: int64) -> int64 {
    if (d == 3) { return d + a; }
    return fourth(a, b, c, d - 1) * 2 + b - c;
}
fn sel(a: int64, b: int64) -> bool {
    if (a > b) { return a - b > 10; }
    return sel(a + 5, b);
}
fn main() -> int32 {
    println_int(fib(20));
    println_int((int64)narrow(100, -20));
    println_int((int64)narrow(-128, 127));
    println_int((int64)wide(65535, 70));
    println_int(fourth(1, 2, 3, 9));
    println_int((int64)sel(-30, 4));
    println_int((int64)sel(3, 4));
    return 0;
}
"""


def test_an_early_exit_runs_before_the_prologue(tmp_path):
    """fib's base case compares and returns on the argument register, before any frame; a
    parameter arriving in a scratch register (rcx: `fourth`'s d) keeps the normal entry; the
    programs print what -O0 prints."""
    code, _, fn = _select(tmp_path, EARLY, "fib")
    first = code.get(fn.symbol) or code["prologue"]
    assert [mn for mn, _ in first[:2]] == ["cmp", "jge"] and ("ret", ()) in first, first
    assert "push" not in [mn for mn, _ in first]       # the frame comes after (.Lslow)
    code, _, fn = _select(tmp_path, EARLY, "fourth")
    assert (code.get(fn.symbol) or code["prologue"])[0][0] == "push"
    plain = run(build(tmp_path, EARLY, "early0"))
    opt = run(build(tmp_path, EARLY, "early1", ["-O"]))
    assert opt.returncode == plain.returncode == 0
    assert opt.stdout == plain.stdout and len(opt.stdout.split()) == 7
