"""Enforces DESIGN.md's layer boundaries by reading every import under toolchain/.

Each module under toolchain/ is assigned a layer from its path; every import statement
(including imports inside functions and TYPE_CHECKING blocks: a lazy import is still a
dependency) is resolved to an absolute module name and checked against ALLOWED. Only the
wiring modules (compiler/driver.py, cli.py, __main__.py) may import several layers. The
compiler core must also import nothing outside the standard library and toolchain itself.
The checker is tested on synthetic sources too, so a broken checker cannot pass silently.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOLCHAIN = REPO / "toolchain"
C = "toolchain.compiler"
WIRING = {f"{C}.driver", f"{C}.cli", f"{C}.__main__"}

# Importer layer -> layers it may import (its own layer is always allowed). "target" means
# the importer's own target; other targets are never allowed. The x86-64 target writes
# relocatable objects through the linker's ELF object model, hence targets -> linker.
ALLOWED: dict[str, set[str]] = {
    "diagnostics": set(),
    "ir": {"diagnostics"},
    "frontend": {"ir", "diagnostics"},
    "opt": {"ir", "diagnostics"},
    "target": {"targets-common", "ir", "diagnostics", "linker"},
    "targets-common": {"ir", "diagnostics"},
    "targets-registry": {"target", "targets-common", "ir", "diagnostics"},
    "linker": {"diagnostics"},
    "providers": {"diagnostics"},
    "fmt": {"frontend", "diagnostics"},  # the formatter reads programs as the frontend does
    "rules": set(),  # the Pants plugin runs the toolchain as processes, never imports it
    # The Python runtime (`import mettle`) sits above the compiler: it compiles through the
    # driver (wiring), marshals kernel signatures and launches through the providers.
    "runtime": {"wiring", "providers", "diagnostics", "compiler-other"},
    "package": set(),  # toolchain/__init__.py, toolchain/compiler/__init__.py
}


def layer_of(module: str) -> tuple[str, str | None] | None:
    """(layer, target name or None) for a toolchain module; None outside toolchain."""
    parts = module.split(".")
    if parts[0] != "toolchain":
        return None
    if module in WIRING:
        return ("wiring", None)
    if module in ("toolchain", C):
        return ("package", None)
    if parts[1] in ("linker", "providers", "rules", "runtime"):
        return (parts[1], None)
    if parts[1] != "compiler":
        return ("other", None)
    head = parts[2]
    if head == "targets":
        if len(parts) == 3:
            return ("targets-registry", None)
        if parts[3] == "common":
            return ("targets-common", None)
        return ("target", parts[3])
    if head in ("frontend", "ir", "opt", "diagnostics", "fmt"):
        return (head, None)
    return ("compiler-other", None)


def check_edge(importer: str, imported: str) -> str | None:
    """Why `importer` may not import `imported`, or None when the edge is allowed."""
    src, dst = layer_of(importer), layer_of(imported)
    if src is None or dst is None or src[0] == "wiring":
        return None
    if dst[0] == "wiring" and src[0] != "runtime":
        return "only the CLI may use the driver; layers never import the wiring modules"
    if src[0] in ("other", "compiler-other") or dst[0] in ("other", "package"):
        return None
    if src[0] == "target" and dst[0] == "target":
        return None if src[1] == dst[1] else f"target {src[1]} imports target {dst[1]}"
    if src[0] == dst[0] and src[0] != "rules":
        return None
    if src[0] == "rules" and dst[0] == "rules":
        return None
    if dst[0] in ALLOWED.get(src[0], set()):
        return None
    return f"layer {src[0]} may not import layer {dst[0]}"


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve_imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) for every import; `from P import n` yields P and P.n."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
    return [(line, mod) for line, mod in found if mod and mod != "__future__"]


def layer_violations(path: Path, source: str | None = None) -> list[str]:
    module = module_name(path)
    text = source if source is not None else path.read_text()
    tree = ast.parse(text, filename=str(path))
    out = []
    for line, imported in resolve_imports(tree, module, path.name == "__init__.py"):
        why = check_edge(module, imported)
        if why:
            out.append(f"{path.relative_to(REPO)}:{line}: imports {imported}: {why}")
    return sorted(set(out))


def third_party_imports(path: Path, source: str | None = None) -> list[str]:
    module = module_name(path)
    tree = ast.parse(source if source is not None else path.read_text())
    out = []
    for line, imported in resolve_imports(tree, module, path.name == "__init__.py"):
        top = imported.split(".")[0]
        if top not in sys.stdlib_module_names and top != "toolchain":
            out.append(f"{path.relative_to(REPO)}:{line}: imports third-party {top}")
    return sorted(set(out))


def toolchain_files(exclude_rules: bool = False) -> list[Path]:
    files = sorted(p for p in TOOLCHAIN.rglob("*.py") if "__pycache__" not in p.parts)
    if exclude_rules:
        files = [p for p in files if "rules" not in p.relative_to(TOOLCHAIN).parts[:1]]
    return files


def test_toolchain_tree_is_not_empty():
    assert (TOOLCHAIN / "compiler" / "diagnostics.py") in toolchain_files()


def test_every_import_respects_the_layer_rules():
    problems = [v for p in toolchain_files() for v in layer_violations(p)]
    assert not problems, "layer violations:\n" + "\n".join(problems)


def test_toolchain_imports_no_third_party_package():
    # The Pants plugin (toolchain/rules/) runs inside Pants and imports pants.*. The runtime
    # (toolchain/runtime/) imports NumPy and torch inside the functions that take their
    # arrays, never at module level (test_runtime_imports_array_libraries_lazily).
    problems = [v for p in toolchain_files(exclude_rules=True)
                if "runtime" not in p.relative_to(TOOLCHAIN).parts[:1]
                for v in third_party_imports(p)]
    assert not problems, "third-party imports in the compiler core:\n" + "\n".join(problems)


def test_runtime_imports_array_libraries_lazily():
    """`import mettle` needs nothing outside the standard library: the runtime's third-party
    imports (numpy, torch) are all inside functions."""
    problems = []
    for path in sorted((TOOLCHAIN / "runtime").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom) and \
                    node.level == 0:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                problems += [f"{path.relative_to(REPO)}:{node.lineno}: imports {n}"
                             for n in names if n.split(".")[0] not in sys.stdlib_module_names]
    assert not problems, "module-level third-party imports:\n" + "\n".join(problems)


def _python_files(folder: str) -> list[Path]:
    return sorted(p for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts)


def imports_of_tests(path: Path, source: str | None = None) -> list[str]:
    """The imports of `tests` (the test suite) in one file."""
    tree = ast.parse(source if source is not None else path.read_text())
    out = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        out += [f"{path.relative_to(REPO)}:{node.lineno}: imports {n}" for n in names
                if n == "tests" or n.startswith("tests.")]
    return out


def test_tools_and_bench_never_import_the_test_suite():
    """tools/ and bench/ run kernels through `mettle` (the runtime), never through tests/."""
    problems = [v for folder in ("tools", "bench") for p in _python_files(folder)
                for v in imports_of_tests(p)]
    assert not problems, "imports of tests/:\n" + "\n".join(problems)


def test_test_suite_import_checker_flags_both_forms():
    path = REPO / "tools" / "x.py"
    assert imports_of_tests(path, "from tests.gpu.harness import run_kernel\n")
    assert imports_of_tests(path, "def f():\n    import tests.support.ptxas\n")
    assert imports_of_tests(path, "import mettle\nfrom toolchain import runtime\n") == []


def _fake(rel: str) -> Path:
    return TOOLCHAIN / rel


@pytest.mark.parametrize("rel, source", [
    ("compiler/frontend/x.py", "from ..targets.ptx import emitter\n"),
    ("compiler/frontend/x.py", "def f():\n    import toolchain.compiler.opt.manager\n"),
    ("compiler/frontend/x.py", "from toolchain.linker import link\n"),
    ("compiler/ir/x.py", "from ..frontend import parser\n"),
    ("compiler/ir/x.py", "from ..opt.manager import PIPELINE\n"),
    ("compiler/opt/x.py", "from ..targets.x86_64 import isel\n"),
    ("compiler/targets/ptx/x.py", "from ..spirv import module\n"),
    ("compiler/targets/ptx/x.py", "from ...frontend.parser import parse\n"),
    ("linker/x.py", "from ..compiler.frontend import api\n"),
    ("providers/cuda/x.py", "from ...compiler.frontend import api\n"),
    ("compiler/ir/x.py", "from .. import driver\n"),
    ("compiler/fmt/x.py", "from ..ir.module import Module\n"),
    ("compiler/frontend/x.py", "from ..fmt import format_source\n"),
    ("compiler/frontend/x.py", "from ...runtime import cuda\n"),
    ("providers/cuda/x.py", "from ...runtime import module\n"),
])
def test_checker_flags_upward_and_sideways_imports(rel, source):
    assert layer_violations(_fake(rel), source)


@pytest.mark.parametrize("rel, source", [
    ("compiler/frontend/x.py", "from ..ir.builder import Builder\nfrom .. import diagnostics\n"),
    ("compiler/opt/x.py", "from ...compiler.ir import module\n"),
    ("compiler/targets/ptx/x.py", "from . import regs\nfrom ...ir.types import I32\n"),
    ("compiler/targets/x86_64/x.py", "from ....linker.objfile import ObjectFile\n"),
    ("compiler/driver.py", "from .frontend import api\nfrom .targets.ptx import emitter\n"),
    ("linker/x.py", "from ..compiler.diagnostics import error\n"),
    ("compiler/fmt/x.py", "from ..frontend.parser import Parser\nfrom .. import diagnostics\n"),
    ("compiler/cli.py", "from .fmt.command import main\n"),
    ("runtime/x.py", "from ..compiler import driver\nfrom ..providers.cuda import driver\n"),
])
def test_checker_accepts_downward_imports(rel, source):
    assert layer_violations(_fake(rel), source) == []


def test_checker_flags_third_party_but_not_stdlib():
    assert third_party_imports(_fake("compiler/ir/x.py"), "import numpy\nimport json\n") == [
        "toolchain/compiler/ir/x.py:1: imports third-party numpy"]


# ---- the optimizer's passes ---------------------------------------------------------------
# Passes share helpers only through these modules (the edit API, cloning, analyses and the
# shared facts), never through each other's private names (however the import is spelled:
# `.x`, `..opt.x`, `toolchain.compiler.opt.x`); only edit.make_instr constructs an `Instr`
# and only edit.retarget_op assigns an instruction's `.op` (passes create and rewrite
# instructions through the edit API or the builder).
OPT = TOOLCHAIN / "compiler" / "opt"
OPT_SHARED = {"__init__", "analyses", "clone", "edit", "loop_shape", "op_facts",
              "pointer_facts"}
INSTR_MAKER = "edit"


def _opt_target(node: ast.ImportFrom) -> str | None:
    """The opt-relative module an import in an opt module names (`""`: the package)."""
    mod = node.module or ""
    if node.level == 1:
        return mod
    for prefix in ({2: "opt", 3: "compiler.opt", 4: "toolchain.compiler.opt"}.get(node.level),
                   "toolchain.compiler.opt" if node.level == 0 else None):
        if prefix and (mod == prefix or mod.startswith(prefix + ".")):
            return mod[len(prefix) + 1:]
    return None


def opt_violations(name: str, source: str, modules: set[str]) -> list[str]:
    """Breaches of the pass rules above in opt module `name` (`modules`: the opt modules)."""
    tree = ast.parse(source)
    out, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("toolchain.compiler.opt.") and a.asname:
                    aliases[a.asname] = a.name.rsplit(".", 1)[1]
        elif isinstance(node, ast.ImportFrom) and _opt_target(node) is not None:
            target = _opt_target(node)
            if not target:
                for a in node.names:
                    aliases[a.asname or a.name] = a.name
                    if name in OPT_SHARED and a.name in modules - OPT_SHARED:
                        out.append(f"{name}:{node.lineno}: shared module imports pass {a.name}")
                continue
            top = target.split(".")[0]
            if top not in modules:
                continue
            for a in node.names:
                if a.name.startswith("_"):
                    out.append(f"{name}:{node.lineno}: imports private {top}.{a.name}")
            if name in OPT_SHARED and top not in OPT_SHARED:
                out.append(f"{name}:{node.lineno}: shared module imports pass {top}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases and node.attr.startswith("_"):
            out.append(f"{name}:{node.lineno}: uses private "
                       f"{aliases[node.value.id]}.{node.attr}")
        elif isinstance(node, ast.Call) and name != INSTR_MAKER and (
                (isinstance(node.func, ast.Name) and node.func.id == "Instr") or
                (isinstance(node.func, ast.Attribute) and node.func.attr == "Instr")):
            out.append(f"{name}:{node.lineno}: constructs Instr (use edit.make_instr)")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) \
                and name != INSTR_MAKER:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "op" for t in targets):
                out.append(f"{name}:{node.lineno}: assigns an instruction's op "
                           "(use edit.retarget_op)")
    return out


def _opt_modules() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(OPT.glob("*.py"))}


def test_passes_share_only_public_helpers_and_build_through_edit():
    mods = _opt_modules()
    problems = [v for n, src in mods.items() for v in opt_violations(n, src, set(mods))]
    assert not problems, "optimizer pass rule breaches:\n" + "\n".join(problems)


@pytest.mark.parametrize("name, source", [
    ("load_ahead", "from .unroll_runtime import _shape\n"),
    ("load_ahead", "from . import unroll_runtime\nx = unroll_runtime._shape\n"),
    ("edit", "from .gvn import PURE\n"),
    ("licm", "from ..ir.module import Instr\nx = Instr('add', None, [], {}, [])\n"),
    ("licm", "from ..ir import module\nx = module.Instr('add', None, [], {}, [])\n"),
    ("load_ahead", "from ..opt.unroll_runtime import _shape\n"),
    ("load_ahead", "from toolchain.compiler.opt.unroll_runtime import _shape\n"),
    ("load_ahead", "import toolchain.compiler.opt.unroll_runtime as u\nx = u._shape\n"),
    ("index_scale", "def f(u):\n    u.op = 'byteadd'\n"),
])
def test_pass_rule_checker_flags(name, source):
    assert opt_violations(name, source, set(_opt_modules()))


def test_pass_rule_checker_accepts_the_shared_api():
    src = ("from .edit import make_instr, retarget_op\nfrom .op_facts import PURE\n"
           "from .unroll_runtime import open_main_loop\nx = make_instr('add', None, [], {}, [])\n"
           "retarget_op(x, 'sub', [])\nif x.op == 'sub':\n    pass\n")
    assert opt_violations("load_ahead", src, set(_opt_modules())) == []
