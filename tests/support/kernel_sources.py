"""Every kernel source of the repository, for the tests that compile all of them.

A source is a `.mettle` file under tests, bench, examples, app or std, or a Mettle program
written as a string constant in a Python file under tests or bench (any constant holding
`kernel NAME(`). Sources are (name, path, text): `path` is the file to compile (a string
constant's is a made-up name in its Python file's directory, so relative imports resolve
the same way), `text` is None for a file on disk. Order is deterministic.
"""
from __future__ import annotations

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILE_DIRS = ("tests", "bench", "examples", "app", "std")
STRING_DIRS = ("tests", "bench")
_KERNEL = re.compile(r"\bkernel\s*(\([^)]*\))?\s+\w+\s*\(")


def _walk(top: str):
    for dirpath, dirnames, names in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        for n in sorted(names):
            yield os.path.join(dirpath, n)


def kernel_sources() -> list[tuple[str, str, str | None]]:
    out = []
    for top in FILE_DIRS:
        for path in _walk(top):
            if path.endswith(".mettle"):
                out.append((os.path.relpath(path, ROOT), path, None))
    for top in STRING_DIRS:
        for path in _walk(top):
            if not path.endswith(".py"):
                continue
            with open(path, encoding="utf-8") as f:
                try:
                    tree = ast.parse(f.read())
                except SyntaxError:
                    continue
            seen = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and _KERNEL.search(node.value) and node.value not in seen:
                    seen.add(node.value)
                    rel = os.path.relpath(path, ROOT)
                    name = f"{rel}:{node.lineno}"
                    fake = os.path.join(os.path.dirname(path), f"_kernel_{node.lineno}.mettle")
                    out.append((name, fake, node.value))
    return out


# Modules that build kernel sources in Python (helpers of tests/tensor and tests/ptx):
# their module-level strings, the strings one container level down, and what their
# `*_source` functions return with every parameter defaulted.
GENERATORS = ("tests.tensor.kernels", "tests.tensor.wgmma_kernels",
              "tests.tensor.staging_kernels", "tests.tensor.residency_kernels",
              "tests.tensor.fused_bias_cases", "tests.tensor.narrow_cases",
              "tests.tensor.transfer_cases", "tests.tensor.snippets")


def _strings(value, depth: int = 0):
    if isinstance(value, str):
        yield value
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            yield from _strings(v, depth + 1)
    elif depth < 2 and isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v, depth + 1)


def generated_sources() -> list[tuple[str, str, str | None]]:
    import importlib
    import inspect
    out, seen = [], set()
    for mod_name in GENERATORS:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        d = os.path.join(ROOT, *mod_name.split(".")[:-1])
        for attr in sorted(vars(mod)):
            value = getattr(mod, attr)
            if callable(value) and attr.endswith("_source") and \
                    getattr(value, "__module__", None) == mod_name:
                params = inspect.signature(value).parameters.values()
                if all(p.default is not p.empty for p in params):
                    value = value()
            for k, text in enumerate(_strings(value)):
                if _KERNEL.search(text) and text not in seen:
                    seen.add(text)
                    out.append((f"{mod_name}.{attr}[{k}]",
                                os.path.join(d, f"_gen_{attr}_{k}.mettle"), text))
    return out
