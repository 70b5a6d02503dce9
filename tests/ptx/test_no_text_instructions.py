"""No PTX instruction is built from text anywhere in targets/ptx/.

Every lowering builds `PtxInstr` objects through the typed constructors and name tables of
targets/ptx/ops.py. The emitter has no text entry point (the old `emit(text)` / `raw(text)`
parsed formatted lines back into objects), no lowering formats an opcode with an f-string,
and no compiler module imports parse.py, which only reads `.ptx` files that arrive as text
(tools/gpu, the test simulator).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from toolchain.compiler.targets.ptx.function import FnEmitter

COMPILER = Path(__file__).resolve().parents[2] / "toolchain" / "compiler"
PTX = COMPILER / "targets" / "ptx"

# Opcodes whose names ops.py composes from checked parts; an f-string starting with one of
# them and a dot outside ops.py spells an opcode by hand. (`wmma.`/`mma.` are left out:
# they also start feature names, `wmma.f16`, and the tensor Form table's mma.sync heads.)
_OPCODE_HEAD = re.compile(
    r"(add|sub|mul|mad|div|rem|min|max|neg|abs|not|and|or|xor|shl|shr|bfe|bfi|popc|prmt|fma|"
    r"ld|st|mov|cvt|cvta|setp|selp|bra|bar|atom|red|fence|cp|ldmatrix|stmatrix|wgmma|shfl|"
    r"vote|redux|mbarrier|tensormap|sqrt|rsqrt|ex2|lg2|sin|cos)\.")


def text_sites(source: str, table: bool = False) -> tuple[int, int]:
    """(calls of a text entry point `emit`/`raw`, opcodes spelled with f-strings: as the
    name of an `op`/`effect`/`put` call, or, outside the name table (`table`), any f-string
    starting `opcode.`)."""
    lines = opcodes = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr) and not table and node.values \
                and isinstance(node.values[0], ast.Constant) \
                and _OPCODE_HEAD.match(node.values[0].value):
            opcodes += 1
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr in ("emit", "raw"):
            lines += 1
        elif node.func.attr in ("op", "effect") and node.args \
                and isinstance(node.args[0], ast.JoinedStr) \
                and not _OPCODE_HEAD.match(_head(node.args[0])):
            opcodes += 1             # (an `opcode.` head was counted above already)
    return lines, opcodes


def _head(s: ast.JoinedStr) -> str:
    return s.values[0].value if s.values and isinstance(s.values[0], ast.Constant) else ""


def test_the_emitter_has_no_text_entry_point():
    assert not [m for m in ("emit", "raw") if hasattr(FnEmitter, m)]


def test_no_instruction_is_built_from_text_in_targets_ptx():
    got = {}
    for path in sorted(PTX.rglob("*.py")):
        rel = path.relative_to(PTX).as_posix()
        sites = text_sites(path.read_text(encoding="utf-8"), table=rel == "ops.py")
        if sites != (0, 0):
            got[rel] = sites
    assert got == {}, "text-built PTX instructions: build them with targets/ptx/ops.py"


def test_no_compiler_module_imports_the_ptx_text_reader():
    readers = []
    for path in sorted(COMPILER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module or ''}.{a.name}"
                                               for a in node.names]
                if any(n.split(".")[-1] == "parse" and "ptx" in path.parts for n in names) \
                        or any("targets.ptx.parse" in n for n in names):
                    readers.append(path.relative_to(COMPILER).as_posix())
    assert readers == []


def test_the_counter_sees_every_kind():
    assert text_sites('em.emit(f"mov.u32 {r}, 0")\nem.raw("x:")\n') == (2, 1)
    assert text_sites('em.op(f"ld{s}.u32", d, a)\nem.op("mov.u32", d, a)\n') == (0, 1)
    assert text_sites('name = {"min": f"min.{t}"}[op]\nem.op(name, d, a, b)\n') == (0, 1)
    assert text_sites('name = f"min.{t}"\n', table=True) == (0, 0)
    assert text_sites('em.put(ops.mov("u32", d, 0))\nneed(f"wmma.{fam}")\n') == (0, 0)
    assert text_sites('em.op(f"{reg}.x", d)\n') == (0, 1)
