"""Later-tier constructs in kernels: generic device helpers (one instantiated with two types
from one kernel), trait methods on primitives, struct methods, match and defer compile to
SPIR-V (spirv-val) and PTX (ptxas), struct values included (by-value struct parameters,
copies and tagged enums; tests/ptx/test_aggregates.py runs such a kernel). Closures are
refused in device code (E0505) for both (test_later_tier.py)."""
from __future__ import annotations

import pytest

from tests.support.spirv import validate
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

SCALAR = """
fn add_twice<T>(a: T, b: T) -> T { return a + b + b; }
trait Half { fn half(self: Self) -> Self; }
impl Half for int32 { fn half(self: Self) -> Self { return self / 2; } }
fn bounded(n: int32) -> int32 {
    var r: int32 = n;
    defer r = 0;
    if (n > 100) { return 100; }
    return r;
}
kernel k(p: float32*, q: int32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < bounded(n)) {
        p[i] = add_twice<float32>(p[i], 0.5);
        q[i] = add_twice<int32>(q[i], 1).half();
    }
}
"""

AGGREGATE = """
struct Acc {
    total: float32;
    method scaled(k: float32) -> float32 { return this.total * k; }
}
enum Op { Scale(float32), Shift(int32), Nop }
fn apply(op: Op, x: float32) -> float32 {
    match (op) {
        case Scale(k): { return x * k; }
        case Shift(s): { return x + (float32)s; }
        case Nop: { return x; }
    }
}
kernel k(p: float32*, q: int32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) {
        var a: Acc;
        a.total = p[i];
        var op: Op = Scale(2.0);
        if (q[i] > 3) { op = Shift(q[i]); }
        p[i] = apply(op, a.scaled(0.5));
    }
}
"""


def build(tmp_path, src: str, emit: str, optimize: bool):
    path = tmp_path / "k.mettle"
    path.write_text(src)
    opts = Options(emit=emit, optimize=optimize,
                   gpu_arch="sm_90a" if emit == "ptx" else None)
    return compile_file(str(path), opts)


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("src", [SCALAR, AGGREGATE], ids=["scalar", "aggregate"])
def test_spirv_validates(tmp_path, src, optimize):
    validate(build(tmp_path, src, "spirv", optimize).data)


@pytest.mark.parametrize("optimize", [False, True])
def test_ptx_assembles(tmp_path, ptxas, optimize):
    result = build(tmp_path, SCALAR, "ptx", optimize)
    text = result.data.decode()
    if not optimize:        # two instances of one generic helper (inlined at -O)
        assert "add_twice__float32" in text and "add_twice__int32" in text
    ptxas(text, "sm_90a")


@pytest.mark.parametrize("optimize", [False, True])
def test_ptx_aggregates(tmp_path, ptxas, optimize):
    text = build(tmp_path, AGGREGATE, "ptx", optimize).data.decode()
    if optimize:            # the struct-taking helpers are inlined: no call, no memory
        assert "call.uni" not in text and ".local" not in text
    else:
        assert ".param .align 4 .b8 apply_param_0[8]" in text      # Op (tag, payload)
    ptxas(text, "sm_90a")


@pytest.mark.parametrize("optimize", [False, True])
def test_ptx_struct_copy(tmp_path, ptxas, optimize):
    src = AGGREGATE.replace("p[i] = apply(op, a.scaled(0.5));",
                            "var b: Acc = a;\n        p[i] = b.total + apply(op, 1.0);")
    ptxas(build(tmp_path, src, "ptx", optimize).data.decode(), "sm_90a")


FN_VALUE = """fn twice(x: int32) -> int32 { return x * 2; }
kernel k(x: int32*) {
    var f: fn(int32) -> int32 = twice;
    x[thread.x] = 0;
}
"""


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("emit,code", [("ptx", "E0505"), ("spirv", "E0510")])
def test_a_function_value_in_device_code_is_refused_where_named(tmp_path, emit, code,
                                                                 optimize):
    # -O deletes the unused local before a back end sees it: the frontend refuses it
    with pytest.raises(CompileError) as ei:
        build(tmp_path, FN_VALUE, emit, optimize)
    d = ei.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == (code, 3, 33) and "twice" in d.message


def test_a_device_error_in_a_helper_names_the_path_from_the_kernel(tmp_path):
    # the error sits in a function the user did not write (std/io's println): the note
    # leads back to the kernel through the user's calls
    src = ('import "std/io"\nfn helper(x: float32) -> float32 { println("hi"); return x; }\n'
           "kernel k(p: float32*) {\n  p[thread.x] = helper(p[thread.x]);\n}\n")
    with pytest.raises(CompileError) as info:
        build(tmp_path, src, "ptx", False)
    (d,) = info.value.diagnostics
    assert d.code == "E0404" and d.span.file.endswith("io.linux.mettle")
    assert d.notes == [f"reached from kernel `k` -> `helper` (called at {tmp_path}/k.mettle:4:"
                       f"17) -> `println` (called at {tmp_path}/k.mettle:2:36)"]
