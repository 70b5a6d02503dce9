"""No PTX instruction is built from text in targets/ptx/ outside the files still being
ported, and those only shrink.

Text-built instructions are (a) calls of the emitter's text entry points `emit(...)` /
`raw(...)`, whose lines parse.py parses back into objects, and (b) opcodes formatted with
f-strings (`em.op(f"ld{space}.{t}", ...)`). The typed constructors of
targets/ptx/ops.py replace both. `PORTING` lists, per file, how many of each remain; the
counts must match exactly (a port lowers its file's entry; a new text site anywhere fails).
When every entry is gone, parse.py's parse-back path and FnEmitter.emit go too.
"""
from __future__ import annotations

import ast
from pathlib import Path

PTX = Path(__file__).resolve().parents[2] / "toolchain" / "compiler" / "targets" / "ptx"

# file (relative to targets/ptx) -> (emit/raw text lines, f-string opcodes)
PORTING = {
}


def text_sites(source: str) -> tuple[int, int]:
    """(emit/raw calls, op/effect calls whose opcode is an f-string)."""
    lines = opcodes = 0
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr in ("emit", "raw"):
            lines += 1
        elif node.func.attr in ("op", "effect") and node.args \
                and isinstance(node.args[0], ast.JoinedStr):
            opcodes += 1
    return lines, opcodes


def test_text_built_instructions_only_where_porting_remains():
    got = {}
    for path in sorted(PTX.rglob("*.py")):
        rel = path.relative_to(PTX).as_posix()
        if rel == "parse.py":                 # reads .ptx files from disk (tools/gpu)
            continue
        sites = text_sites(path.read_text(encoding="utf-8"))
        if sites != (0, 0) or rel in PORTING:
            got[rel] = sites
    assert got == PORTING, "text-built PTX instructions changed; a ported file lowers its " \
        "PORTING entry (drop it at (0, 0)), and no other file may build text"


def test_the_counter_sees_both_kinds():
    assert text_sites('em.emit(f"mov.u32 {r}, 0")\nem.raw("x:")\n') == (2, 0)
    assert text_sites('em.op(f"ld{s}.u32", d, a)\nem.op("mov.u32", d, a)\n') == (0, 1)
    assert text_sites('em.put(ops.mov("u32", d, 0))\n') == (0, 0)
