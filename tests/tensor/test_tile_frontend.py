"""Tile values in the frontend (docs/reference/tiles.md): each refusal is a located
diagnostic with its code; `tile` stays an ordinary identifier elsewhere."""
from __future__ import annotations

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.ir import device_program
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def lower(src: str, target: str | None = None):
    module, _ = compile_to_ir("k.mettle", gpu=True, source_text=src, device_target=target)
    device_program(module)                     # the shared verifiers (uniformity) too
    return module


def diag(src: str, target: str | None = None):
    with pytest.raises(CompileError) as info:
        lower(src, target)
    return info.value.diagnostics[0]


HEAD = "kernel(block = 128) k(x: float32*, y: uint16*, n: uint32) {\n"


def body(*lines: str) -> str:
    return HEAD + "".join(f"    {l}\n" for l in lines) + "}\n"


CASES = [
    ("E0350", body("var t: tile<f32, 100, 16> = tile_fill(0.0);"), 2, "multiple of 16"),
    ("E0350", body("var t: tile<f16, 64, 1> = tile_fill(0.0);"), 2, "vector"),
    ("E0350", body("var t: tile<f8, 64, 64> = tile_fill(0.0);"), 2, "unknown tile format"),
    ("E0351", body("var a: tile<f32, 16, 16> = tile_fill(1.0);",
                   "var b: tile<f32, 16, 16> = a + tile_fill(1.0);"), 3, "takes its shape"),
    ("E0352", body("var a: tile<f16, 32, 16> = tile_fill(1.0);",
                   "var c: tile<f32, 32, 32> = tensor_matmul(a, a);"), 3, "a's columns"),
    ("E0352", body("var a: tile<f32, 32, 16> = tile_fill(1.0);",
                   "var r: tile<f32, 1, 32> = tile_fill(1.0);",
                   "a = a + r;"), 4, "cannot broadcast 1x32 with 32x16"),
    ("E0352", body("var a: tile<f16, 32, 16> = tile_fill(1.0);",
                   "var b: tile<f16, 32, 16> = a * 2.0;"), 3, "needs f32 tiles"),
    ("E0353", body("var a: tile<f32, 16, 16> = tile_fill(1.0);",
                   "var s: float32 = a;"), 3, "used as a scalar"),
    ("E0353", "fn f(t: tile<f32, 16, 16>) {}\n" + body(), 1, "only be the type"),
    ("E0353", body("tile_exp2(1.0);"), 2, "yields a tile"),
    ("E0354", body("var a: tile<f32, 16, 16> = tile_load(x, 0, 0, n, 16, layout: diag);"),
     2, "`layout:`"),
    ("E0354", body("var a: tile<f32, 16, 16> = tile_load(x, 0, 0, n, 16, pitch: 4);"),
     2, "no option `pitch`"),
    ("E0343", body("var a: tile<f32, 16, 16> = tile_load(y, 0, 0, n, 16);"), 2, "float32*"),
    ("E0303", "kernel k(x: float32*) {\n    var t: tile<f32, 16, 16> = tile_fill(0.0);\n}\n",
     2, "multiple of 128"),
    ("E0310", "fn h(x: float32*) {\n    tile_store(x, x, 0, 0, 1, 1);\n}\n" +
     body("h(x);"), 2, "only legal directly inside a GPU kernel"),
    ("E0352", body("var a: tile<f32, 16, 16> = tile_fill(1.0);",
                   "var b: tile<f32, 32, 16> = a;"), 3, "cannot be assigned"),
    ("E0413", body("var t: tile<f32, 16, 16> = tile_fill(0.0);",
                   "if (thread.x / 32 == 0) { t = tile_exp2(t); }"), 3, "subgroup-uniform control"),
    ("E0414", body("var t: tile<f32, 16, 16> = tile_fill((float32)thread.x);"), 2,
     "operand `value`"),
]


@pytest.mark.parametrize("code,src,line,words", CASES)
def test_each_refusal_is_located_with_its_code(code, src, line, words):
    d = diag(src)
    assert d.code == code, d
    assert d.span is not None and d.span.line == line, d
    assert words in d.message, d.message


def test_spirv_compiles_tiles_with_contraction_off(tmp_path):
    """test_tile_pocl.py runs them; here: valid OpenCL 2.0 SPIR-V, ContractionOff."""
    import shutil
    import subprocess
    from toolchain.compiler.driver import Options, compile_file
    path = tmp_path / "k.mettle"
    path.write_text(body("var a: tile<f32, 16, 16> = tile_load(x, 0, 0, n, 16);",
                         "tile_store(x, a * a + a, 0, 0, n, 16);"))
    spv = compile_file(str(path), Options(emit="spirv")).data
    (tmp_path / "k.spv").write_bytes(spv)
    if shutil.which("spirv-val"):
        proc = subprocess.run(["spirv-val", "--target-env", "opencl2.0", str(tmp_path / "k.spv")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    if shutil.which("spirv-dis"):
        dis = subprocess.run(["spirv-dis", str(tmp_path / "k.spv")], capture_output=True,
                             text=True).stdout
        assert "ContractionOff" in dis and "exp2" not in dis


def test_tile_is_still_an_identifier():
    lower("kernel k(o: float32*) {\n    var tile: uint32 = thread.x;\n"
          "    o[tile] = 1.0;\n}\n")


def test_tile_ops_are_marked_for_the_uniformity_verifier():
    m = lower(body("var a: tile<f32, 16, 16> = tile_load(x, 0, 0, n, 16);",
                   "a = tile_exp2(a);"))
    what = [i.attrs["what"] for f in m.functions.values() for i in f.instructions()
            if i.op == "tile.uniform"]
    assert what == ["tile_load", "tile assignment", "tile_exp2", "tile assignment"]


def test_const_flag_builds_variants_and_refuses_bad_values(tmp_path):
    """`mettle --const` (docs/reference/tiles.md "Variants"), run as the command."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "v.mettle"
    src.write_text("const D = 32;\nconst ELEM = f16;\n"
                   "kernel(block = 128) k(x: float32*, o: float32*) {\n"
                   "    var a: tile<f32, D, D> = tile_load(x, 0, 0, D, D);\n"
                   "    var h: tile<ELEM, D, D> = tile_convert(a, to: ELEM);\n"
                   "    tile_store(o, tensor_matmul(h, h), 0, 0, D, D);\n}\n")
    env = dict(os.environ, PYTHONPATH=str(root))

    def mettle(*flags):
        return subprocess.run([sys.executable, "-m", "toolchain.compiler", "--emit-ptx",
                               "--gpu-arch=sm_80", str(src), "-o", str(tmp_path / "o.ptx"),
                               *flags], env=env, capture_output=True, text=True, timeout=300)
    small, big = mettle(), mettle("--const", "D=64", "--const", "ELEM=bf16")
    assert small.returncode == 0 and big.returncode == 0, small.stderr + big.stderr
    assert "cvt.rn.bf16.f32" in (tmp_path / "o.ptx").read_text()
    for flag, words in (("E=3", "no top-level const named E"),
                        ("ELEM=7", "ELEM is a format constant"),
                        ("D=abc", "D is an integer constant")):
        bad = mettle("--const", flag)
        assert bad.returncode == 1 and "error[E0355]" in bad.stderr, bad.stderr
        assert words in bad.stderr and "Traceback" not in bad.stderr
    value = "const ELEM = f16;\nkernel k(o: float32*) { var x: int32 = ELEM; }\n"
    with pytest.raises(CompileError) as info:
        lower(value)
    assert info.value.diagnostics[0].code == "E0355"


# A tile declaration that fails leaves its name declared (no undefined-name cascade), but
# with no value: each later statement that reads or assigns it stops silently, in the
# register form (tensor_matmul below) and in the replay form alike.
POISONED_USES = [
    ("matmul", ["var b: tile<f16, 32, 16> = tile_fill(1.0);",
                "var c: tile<f32, 32, 16> = tensor_matmul(a, b);"]),
    ("negate", ["var c: tile<f16, 32, 16> = -a;"]),
    ("assign", ["a = tile_fill(1.0);", "tile_store(x, a, 0, 0, n, 16);"]),
    ("max", ["var m: tile<f32, 32, 1> = tile_fill(0.0);",
             "var c: tile<f32, 32, 1> = tile_max(tile_row_max(a), -3.0e38);"]),
]


@pytest.mark.parametrize("target", [None, "spirv"])
@pytest.mark.parametrize("name,uses", POISONED_USES, ids=[n for n, _ in POISONED_USES])
def test_a_failed_tile_declaration_reports_once(name, uses, target):
    decl = "var a: tile<f16, 32, 16> = tile_load(y, 0, 0, n);"      # an argument short
    with pytest.raises(CompileError) as info:
        lower(body(decl, *uses), target)
    assert [(d.code, d.span.line) for d in info.value.diagnostics] == [("E0354", 2)], \
        [(d.code, d.message) for d in info.value.diagnostics]
