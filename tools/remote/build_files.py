"""Reads, without starting Pants, what the remote-execution preflight (preflight.py) needs from
the checkout: the named environments (pants.toml's [environments-preview].names) with the
platform properties of their `remote_environment` targets, and which targets use each one.

Invariants: BUILD files are parsed, never executed; only literal arguments are understood (a
computed name, environment or tag is skipped, not guessed). A target's environment is its own
`environment=` field, else the `__defaults__` of its directory or the nearest parent directory
that sets one for its type (or `all`), as Pants applies them; a target with none uses the
local environment and is not listed. Dot-directories and dist/ are skipped, as Pants does.
"""
from __future__ import annotations

import ast
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED_DIRS = ("dist", "node_modules", "__pycache__")


@dataclass(frozen=True)
class Environment:
    name: str                  # the name targets use (environment="gpu")
    address: str               # the remote_environment target (//tools/remote:gpu_sm90a)
    properties: tuple          # ((key, value), ...) in declaration order


@dataclass
class Target:
    address: str
    kind: str                  # the target type (python_tests, mettle_kernel, ...)
    environment: str | None
    tags: tuple = field(default=())


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _calls(path: Path):
    """(function name, {keyword: literal value}, positional nodes) of each top-level call."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            kwargs = {k.arg: _literal(k.value) for k in call.keywords if k.arg}
            yield call.func.id, kwargs, call.args, call.keywords


def _default_environments(args, keywords) -> dict:
    """{target type or "all": environment} set by one `__defaults__(...)` call."""
    found = {}

    def field_of(value):
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "dict":
            return next((_literal(k.value) for k in value.keywords if k.arg == "environment"),
                        None)
        literal = _literal(value)
        return literal.get("environment") if isinstance(literal, dict) else None

    for arg in args:
        if not isinstance(arg, ast.Dict):
            continue
        for key, value in zip(arg.keys, arg.values):
            env = field_of(value)
            names = key.elts if isinstance(key, ast.Tuple) else [key]
            for name in names:
                kind = name.id if isinstance(name, ast.Name) else _literal(name)
                if isinstance(kind, str) and isinstance(env, str):
                    found[kind] = env
    for keyword in keywords:
        if keyword.arg == "all" and isinstance(field_of(keyword.value), str):
            found["all"] = field_of(keyword.value)
    return found


def build_files(root: Path):
    """Every BUILD file under `root`, in a stable order, as (directory relative to root, path)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in SKIPPED_DIRS)
        rel = Path(dirpath).relative_to(root).as_posix()
        for name in sorted(filenames):
            if name == "BUILD" or name.startswith("BUILD."):
                yield ("" if rel == "." else rel), Path(dirpath) / name


def address(directory: str, name: str) -> str:
    """As Pants prints addresses: `tests/gpu:gpu`, `//:mettle` at the root."""
    return f"{directory}:{name}" if directory else f"//:{name}"


def targets(root: Path) -> list:
    """Every target with a literal type and name, its environment resolved (module doc)."""
    defaults, found = {}, []
    for directory, path in build_files(root):
        calls = list(_calls(path))
        for kind, _, args, keywords in calls:
            if kind == "__defaults__":
                defaults.setdefault(directory, {}).update(_default_environments(args, keywords))
        for kind, kwargs, _, _ in calls:
            if kind.startswith("__"):
                continue
            name = kwargs["name"] if "name" in kwargs else Path(directory).name
            if not isinstance(name, str) or not name:
                continue
            env = kwargs.get("environment")
            if env is None:
                env = _inherited(defaults, directory, kind)
            tags = kwargs.get("tags")
            found.append(Target(address(directory, name), kind,
                                env if isinstance(env, str) else None,
                                tuple(t for t in tags if isinstance(t, str))
                                if isinstance(tags, (list, tuple)) else ()))
    return found


def _inherited(defaults: dict, directory: str, kind: str):
    parts = directory.split("/") if directory else []
    for depth in range(len(parts), -1, -1):
        here = defaults.get("/".join(parts[:depth]), {})
        if kind in here or "all" in here:
            return here.get(kind, here.get("all"))
    return None


def environments(root: Path) -> list:
    """The named remote environments: pants.toml's names whose target is a
    `remote_environment`, with its `extra_platform_properties` (what Pants sends). Local and
    docker environments run nothing on the service and are left out."""
    config = tomllib.loads((root / "pants.toml").read_text())
    names = config.get("environments-preview", {}).get("names", {})
    found = []
    for name, addr in names.items():
        directory, _, target = addr.removeprefix("//").partition(":")
        props = _remote_environment_properties(root / directory, target)
        if props is not None:
            found.append(Environment(name, addr, props))
    return found


def _remote_environment_properties(directory: Path, name: str):
    for path in sorted(directory.glob("BUILD*")):
        for kind, kwargs, _, _ in _calls(path):
            if kind == "remote_environment" and kwargs.get("name") == name:
                props = kwargs.get("extra_platform_properties") or []
                return tuple(tuple(p.split("=", 1)) for p in props if "=" in p)
    return None
