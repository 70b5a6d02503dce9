"""Instruction selection of IR the Mettle frontend rarely or never produces, built with the
public IR builder, compiled by emit_object, linked by link_executable and run: min/max,
select (scalar and aggregate), call_indirect returning a MEMORY struct, big memcpy/aggregate
copies, globals with address initialisers, imported data (stdout), unreachable."""
from __future__ import annotations

import os
import subprocess

from toolchain.compiler.ir.builder import Builder
from toolchain.compiler.ir.module import Module
from toolchain.compiler.ir.types import (BOOL, F32, F64, I8, I32, I64, U8, U64, ArrayType,
                                         StructType, ptr)
from toolchain.compiler.targets.x86_64 import emit_object
from toolchain.linker import link_executable

BIG = StructType("Big", (("a", I64), ("b", I64), ("c", ArrayType(I32, 100))))


def _run(tmp_path, m: Module) -> subprocess.CompletedProcess:
    exe = tmp_path / "ir_prog"
    exe.write_bytes(link_executable([emit_object(m)]))
    os.chmod(exe, 0o755)
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)


def _printer(b: Builder):
    pf = b.extern_function("printf", [("fmt", ptr(U8)), ("v", I64)], I32)
    fmt = b.elemptr(b.string_literal(b"%lld\n"))

    def show(v):
        b.call(pf, [fmt, v if v.type == I64 else b.convert(v, I64)])
    return show


def test_min_max_select_and_float_minmax(tmp_path):
    m = Module("t")
    b = Builder(m)
    main = b.function("main", [], I32)
    b.position_at_end(b.append_block(main, "entry"))
    show = _printer(b)
    for t, x, y in ((I8, -5, 7), (U8, 250, 3), (I64, -(1 << 40), 12), (U64, 1 << 63, 5)):
        show_u = (lambda v: show(b.ptrtoint(b.inttoptr(v, ptr(U8)), I64))) if t == U64 else show
        show_u(b.binop("min", b.const(t, x), b.const(t, y)))
        show_u(b.binop("max", b.const(t, x), b.const(t, y)))
    for t in (F32, F64):
        show(b.convert(b.binop("min", b.const(t, 2.5), b.const(t, -1.5)), I64))
        show(b.convert(b.binop("max", b.const(t, 2.5), b.const(t, -1.5)), I64))
    c = b.cmp("gt", b.const(I32, 3), b.const(I32, 2))
    show(b.select(c, b.const(I64, 11), b.const(I64, 22)))
    show(b.convert(b.select(b.unop("not", c), b.const(F64, 1.0),
                            b.const(F64, 4.0)), I64))
    b.ret(b.const(I32, 0))
    out = _run(tmp_path, m)
    wrap = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731  (printed as int64)
    exp = [-5, 7, 3, 250, -(1 << 40), 12, 5, wrap(1 << 63), -1, 2, -1, 2, 11, 4]
    assert [int(x) for x in out.stdout.split()] == exp


def test_memory_struct_through_function_pointer(tmp_path):
    """A 816-byte struct: sret return, by-value stack copy, memcpy over 256 bytes."""
    m = Module("t")
    b = Builder(m)
    make = b.function("make", [("seed", I64)], BIG)
    b.position_at_end(b.append_block(make, "entry"))
    slot = b.alloca(BIG)
    b.store(b.fieldptr(slot, 0), make.params[0])
    b.store(b.fieldptr(slot, 1), b.mul(make.params[0], b.const(I64, 3)))
    arr = b.elemptr(b.fieldptr(slot, 2))
    b.store(b.ptradd(arr, b.const(I64, 99)), b.const(I32, 77))
    b.ret(b.load(slot))
    total = b.function("total", [("x", BIG), ("k", I64)], I64)
    b.position_at_end(b.append_block(total, "entry"))
    tmp = b.alloca(BIG)
    b.store(tmp, total.params[0])
    copy = b.alloca(BIG)
    b.memcpy(copy, tmp, BIG.size)
    last = b.load(b.ptradd(b.elemptr(b.fieldptr(copy, 2)), b.const(I64, 99)))
    s = b.add(b.load(b.fieldptr(copy, 0)), b.load(b.fieldptr(copy, 1)))
    b.ret(b.add(b.add(s, b.convert(last, I64)), total.params[1]))
    main = b.function("main", [], I32)
    b.position_at_end(b.append_block(main, "entry"))
    show = _printer(b)
    v = b.call_indirect(make, [b.const(I64, 10)])
    show(b.call(total, [v, b.const(I64, 1000)]))
    b.ret(b.const(I32, 0))
    out = _run(tmp_path, m)
    assert out.stdout.split() == [str(10 + 30 + 77 + 1000)]


def test_globals_with_addresses_and_imported_data(tmp_path):
    m = Module("t")
    b = Builder(m)
    fputs = b.extern_function("fputs", [("s", ptr(U8)), ("fp", ptr(U8))], I32)
    out_var = b.global_var("out", ptr(U8), linkage="import", link_name="stdout")
    msg = b.string_literal(b"from a table\n")
    table = b.global_var("table", ArrayType(ptr(U8), 2),
                         [(0, ptr(U8), msg), (8, ptr(U8), 0)])
    flag = b.global_var("flag", BOOL)
    small = b.global_var("small", ArrayType(I8, 3), [(0, I8, -1), (2, I8, 5)], constant=True)
    main = b.function("main", [], I32)
    entry, dead = b.append_block(main, "entry"), b.append_block(main, "dead")
    b.position_at_end(entry)
    first = b.load(b.elemptr(table))
    b.call(fputs, [first, b.load(out_var)])
    b.store(flag, b.const(BOOL, True))
    bad = b.cmp("eq", b.load(flag), b.const(BOOL, False))
    code = b.convert(b.load(b.ptradd(b.elemptr(small), b.const(I64, 2))), I32)
    exit_block = b.append_block(main, "exit")
    b.cbr(bad, dead, exit_block)
    b.position_at_end(exit_block)
    b.ret(b.sub(code, b.convert(b.load(b.elemptr(small)), I32)))
    b.position_at_end(dead)
    b.unreachable()
    out = _run(tmp_path, m)
    assert (out.stdout, out.returncode) == ("from a table\n", 5 - (-1))


def test_unreachable_traps(tmp_path):
    m = Module("t")
    b = Builder(m)
    main = b.function("main", [], I32)
    b.position_at_end(b.append_block(main, "entry"))
    b.unreachable()
    assert _run(tmp_path, m).returncode == -4  # SIGILL from ud2
