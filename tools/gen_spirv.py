"""Generate toolchain/compiler/targets/spirv/_grammar.py from the vendored SPIRV-Headers grammar.

Inputs (third_party/spirv/, vendored from Debian's `spirv-headers` package, see VERSION there):
  spirv.core.grammar.json            opcodes, operand kinds, enumerants, capabilities
  extinst.opencl.std.100.grammar.json the OpenCL.std extended instruction set
Output: plain Python literals (tuples and dicts), so the compiler core imports them with no
JSON parsing and no third-party code. The output is a pure function of the inputs: entries
keep grammar order, so regenerating twice gives byte-identical files (a test checks this).

Usage: python3 tools/gen_spirv.py [--check] [-o OUT]
  --check  exit 1 (printing a diff) when OUT differs from what would be generated.
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRAMMAR_DIR = REPO / "third_party" / "spirv"
DEFAULT_OUT = REPO / "toolchain" / "compiler" / "targets" / "spirv" / "_grammar.py"
WIDTH = 99

DOC = '''"""SPIR-V grammar tables (generated; the source of every opcode and enumerant number).

Field order of each entry:
  OPCODES[name]        = (opcode, operands, capabilities, extensions, version)
      operands         = ((kind, quantifier), ...), quantifier "" (one), "?" (optional),
                         "*" (zero or more); the IdResultType/IdResult operands are included.
  OPCODE_NAMES[opcode] = canonical name (the first grammar entry; later ones are aliases)
  OPERAND_KINDS[kind]  = category: "BitEnum", "ValueEnum", "Id", "Literal" or "Composite"
  COMPOSITE_KINDS[kind] = (base kind, ...)
  ENUMERANTS[kind][name] = (value, capabilities, parameters, extensions)
      parameters       = (kind, ...) operands that follow the enumerant in an instruction
  ENUMERANT_NAMES[kind][value] = canonical name
  CAPABILITY_IMPLIES[capability] = capabilities it implicitly declares
  OPENCL_STD[name]     = (number, operands) for OpExtInst with the "OpenCL.std" set
  OPENCL_STD_NAMES[number] = name
"""'''


def _q(operand: dict) -> tuple[str, str]:
    return (operand["kind"], operand.get("quantifier", ""))


def _enum_value(value: object) -> int:
    return int(value, 0) if isinstance(value, str) else int(value)


def _wrap(head: str, body: str, indent: str) -> list[str]:
    """Split `head + body + ","` at ", " boundaries so each line fits WIDTH.

    Safe because no generated string literal contains ", " and every split falls inside
    brackets, where Python continues lines implicitly."""
    line = f"{indent}{head}{body},"
    if len(line) <= WIDTH:
        return [line]
    parts = body.split(", ")
    lines, cur = [], f"{indent}{head}{parts[0]}"
    for part in parts[1:]:
        if len(cur) + 2 + len(part) + 1 > WIDTH:
            lines.append(cur + ",")
            cur = f"{indent}        {part}"
        else:
            cur += f", {part}"
    lines.append(cur + ",")
    return lines


def _dict_block(opener: str, items: list[tuple[object, object]], indent: str = "") -> list[str]:
    """`opener {` (e.g. "OPCODES =" or "'Scope':"), one wrapped line per item, then `}`."""
    out = [f"{indent}{opener} {{"]
    for key, value in items:
        out += _wrap(f"{key!r}: ", repr(value), indent + "    ")
    out.append(f"{indent}}}")
    return out


def _opcodes(core: dict) -> tuple[list, list]:
    ops, names = [], {}
    for ins in core["instructions"]:
        operands = tuple(_q(o) for o in ins.get("operands", []))
        entry = (ins["opcode"], operands, tuple(ins.get("capabilities", [])),
                 tuple(ins.get("extensions", [])), str(ins.get("version", "")))
        ops.append((ins["opname"], entry))
        names.setdefault(ins["opcode"], ins["opname"])
    return ops, sorted(names.items())


def _enum_tables(core: dict) -> tuple[list[str], list[str], list]:
    """ENUMERANTS and ENUMERANT_NAMES blocks plus the Capability implication rows."""
    enum_lines, name_lines = ["ENUMERANTS = {"], ["ENUMERANT_NAMES = {"]
    implies: list = []
    for kind in core["operand_kinds"]:
        if kind["category"] not in ("BitEnum", "ValueEnum"):
            continue
        items, names = [], {}
        for e in kind["enumerants"]:
            value = _enum_value(e["value"])
            params = tuple(p["kind"] for p in e.get("parameters", []))
            items.append((e["enumerant"], (value, tuple(e.get("capabilities", [])), params,
                                           tuple(e.get("extensions", [])))))
            names.setdefault(value, e["enumerant"])
            if kind["kind"] == "Capability":
                implies.append((e["enumerant"], tuple(e.get("capabilities", []))))
        enum_lines += _dict_block(f"{kind['kind']!r}:", items, "    ")
        enum_lines[-1] += ","
        name_lines += _dict_block(f"{kind['kind']!r}:", sorted(names.items()), "    ")
        name_lines[-1] += ","
    return enum_lines + ["}"], name_lines + ["}"], implies


def generate(core: dict, opencl: dict, version: str) -> str:
    """Return the text of _grammar.py for the given grammar documents."""
    ops, op_names = _opcodes(core)
    kinds = [(k["kind"], k["category"]) for k in core["operand_kinds"]]
    composites = [(k["kind"], tuple(k["bases"])) for k in core["operand_kinds"]
                  if k["category"] == "Composite"]
    enum_lines, name_lines, implies = _enum_tables(core)
    ext = [(i["opname"], (i["opcode"], tuple(_q(o) for o in i.get("operands", []))))
           for i in opencl["instructions"]]
    out = [f"# GENERATED by tools/gen_spirv.py (SPIRV-Headers {version}); do not edit", DOC, ""]
    out.append(f"MAGIC_NUMBER = {int(core['magic_number'], 0):#010x}")
    out.append(f"GRAMMAR_VERSION = ({core['major_version']}, {core['minor_version']})")
    out.append(f"GRAMMAR_REVISION = {core['revision']}")
    out.append(f"OPENCL_STD_VERSION = ({opencl['version']}, {opencl['revision']})")
    out.append("")
    out += _dict_block("OPCODES =", ops) + [""]
    out += _dict_block("OPCODE_NAMES =", op_names) + [""]
    out += _dict_block("OPERAND_KINDS =", kinds) + [""]
    out += _dict_block("COMPOSITE_KINDS =", composites) + [""]
    out += enum_lines + [""] + name_lines + [""]
    out += _dict_block("CAPABILITY_IMPLIES =", implies) + [""]
    out += _dict_block("OPENCL_STD =", ext) + [""]
    out += _dict_block("OPENCL_STD_NAMES =", sorted((v[0], k) for k, v in ext))
    return "\n".join(out) + "\n"


def read_version(grammar_dir: Path = GRAMMAR_DIR) -> str:
    """The SPIRV-Headers release named on the first line of third_party/spirv/VERSION."""
    return (grammar_dir / "VERSION").read_text().splitlines()[0].strip()


def generate_from_dir(grammar_dir: Path = GRAMMAR_DIR) -> str:
    core = json.loads((grammar_dir / "spirv.core.grammar.json").read_text())
    opencl = json.loads((grammar_dir / "extinst.opencl.std.100.grammar.json").read_text())
    return generate(core, opencl, read_version(grammar_dir))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = generate_from_dir()
    if args.check:
        old = args.out.read_text() if args.out.exists() else ""
        if old == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            old.splitlines(True), text.splitlines(True), str(args.out), "generated"))
        return 1
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
