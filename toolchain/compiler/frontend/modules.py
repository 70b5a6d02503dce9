"""Whole-program module loading and import resolution (LANGUAGE §6).

`load_program(entry, include_dirs, stdlib_dir)` parses the entry file and, transitively,
every module it imports, and returns a `Program` whose modules are in dependency order
(each module after everything it imports; the entry last).

Resolution order for an import path (`.mettle` appended when it has no extension):
absolute path; `std/...` under the stdlib root (`--stdlib`, else `<repo>/std` beside the
toolchain package, else the installed copy `toolchain/std`, else `./stdlib`); package roots from `mettle.deps` files (`name=dir`
lines, nearest file first, walking up from the importer); the importer's directory; each
`-I` dir; the current directory. On Linux `std/x` prefers `x.linux.mettle`.

Invariants:
- A module is parsed once (keyed by its resolved real path) however often it is imported.
- An import guarded by another OS (`if windows`) is never looked up.
- A duplicate plain import in one module is skipped; an import cycle is a warning (W0103)
  and the back edge is skipped.
- Visibility: a non-entry module that exports anything makes only its exported names
  public. Its other top-level declarations (except externs, whose name is their link
  symbol) get `internal_name = "__import_<hash>_<name>"`; `LoadedModule.hidden` maps every
  hidden name (enum variants included) to that internal name.
- Errors: E0101 missing module, E0102 unreadable file or bad UTF-8, E0105 a selected name
  that the module does not define, E0110 one it keeps private, E0103 two modules defining
  one public name (at the import bringing in the second). Parse errors keep their own
  codes. Everything is collected and raised together as one CompileError.
"""
from __future__ import annotations

from _sha1 import sha1   # hashlib.sha1's digest without loading OpenSSL (~3 ms a compile)
import os
from ...records import dataclass, field

from . import ast as A
from ..diagnostics import CompileError, Diagnostic, DiagnosticBag, Span
from .parser import parse_source

TARGET_OS = "linux"


# Paths are strings spelled as pathlib spells them (display names in diagnostics and spans
# come from them): `pathlib` itself costs every compile ~5 ms of imports (urllib.parse,
# ipaddress, fnmatch, ntpath). Off POSIX, pathlib does the spelling.
def _clean(path: str) -> str:
    """str(PurePath(path)): no empty or `.` components, no trailing slash, "" -> "."."""
    if os.sep != "/":
        from pathlib import PurePath
        return str(PurePath(path))
    root = "//" if path[:2] == "//" and path[2:3] != "/" else "/" if path[:1] == "/" else ""
    return root + "/".join(p for p in path.split("/") if p and p != ".") or "."


def _join(base: str, rel: str) -> str:
    """str(Path(base) / rel)."""
    return _clean(rel if os.path.isabs(rel) else os.path.join(base, rel))


def _parent(path: str) -> str:
    """str(Path(path).parent) of a clean path."""
    return _clean(os.path.dirname(path))


def _has_suffix(path: str) -> bool:
    """Path(path).suffix != "": the last component has a dot, not first or last."""
    name = os.path.basename(_clean(path))
    return 0 < name.rfind(".") < len(name) - 1


_HERE = os.path.dirname(os.path.realpath(__file__))                   # .../frontend
REPO_STD = _join(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))), "std")
PACKAGED_STD = _join(os.path.dirname(os.path.dirname(_HERE)), "std")   # `pip install .`


@dataclass
class ImportBinding:
    """How one module sees another: plain (alias None, names None), `as`, or selective."""
    module: "LoadedModule"
    alias: str | None
    names: list[str] | None
    span: Span


@dataclass
class LoadedModule:
    path: str                       # the path used in spans (resolved file path)
    ast: A.Module
    key: str                        # short hash of the real path; used in internal names
    public: set[str] = field(default_factory=set)
    defines: set[str] = field(default_factory=set)    # public names it defines (no externs)
    hidden: dict[str, str] = field(default_factory=dict)
    uses_export: bool = False
    imports: list[ImportBinding] = field(default_factory=list)
    label: str = ""                 # how messages name it, where not by path: a standard
    #                                 module as `std/<file>`, wherever the stdlib lives

    @property
    def shown(self) -> str:
        return self.label or self.path


@dataclass
class Program:
    modules: list[LoadedModule]     # dependency order, entry last
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def entry(self) -> LoadedModule:
        return self.modules[-1]


def stdlib_root(explicit: str | os.PathLike | None, cwd: str) -> str:
    if explicit is not None:
        return _clean(os.fspath(explicit))
    if os.path.isdir(REPO_STD):
        return REPO_STD
    if os.path.isdir(PACKAGED_STD):
        return PACKAGED_STD
    return _join(cwd, "stdlib")


def _with_ext(spec: str) -> str:
    return spec if _has_suffix(spec) else spec + ".mettle"


def _deps_roots(importer_dir: str) -> list[tuple[str, str]]:
    """(name, dir) pairs from mettle.deps files, nearest directory first."""
    roots = []
    d = importer_dir
    while True:
        deps = _join(d, "mettle.deps")
        lines = None
        if os.path.isfile(deps):
            try:
                with open(deps, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError:
                pass
        for line in lines or ():
            name, eq, target = line.partition("=")
            if eq and name.strip() and not line.lstrip().startswith("#"):
                roots.append((name.strip(), _join(d, target.strip())))
        up = _parent(d)
        if up == d:
            return roots
        d = up


def candidates(spec: str, importer: str, include_dirs, std_root: str, cwd: str,
               target_os: str = TARGET_OS, exact: bool = False) -> list[str]:
    """Every path tried for `spec`, in lookup order (the first existing file wins). `exact`
    (import_str's files) uses the path as written: no `.mettle` added, no OS variant."""
    rel = spec if exact else _with_ext(spec)
    if os.path.isabs(spec):
        return [spec] if exact else [_clean(rel)]
    out: list[str] = []
    if spec.startswith("std/"):
        rest = spec[4:]
        if not exact and not _has_suffix(spec):
            out.append(_join(std_root, f"{rest}.{target_os}.mettle"))
        out.append(_join(std_root, rest if exact else _with_ext(rest)))
    head, _, tail = rel.partition("/")
    importer_dir = _parent(importer)
    if tail:
        out += [_join(root, tail) for name, root in _deps_roots(importer_dir) if name == head]
    out.append(_join(importer_dir, rel))
    out += [_join(os.fspath(d), rel) for d in include_dirs]
    out.append(_join(cwd, rel))
    return out


def _read(path: str, display: str, span: Span | None, bag: DiagnosticBag) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        bag.error("E0102", f"cannot read '{display}': {e.strerror}", span)
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        line_start = data.rfind(b"\n", 0, e.start) + 1
        col = len(data[line_start:e.start].decode("utf-8", "replace")) + 1
        bag.error("E0102", "source is not valid UTF-8", Span(display, line, col, 1))
        return None


def _apply_visibility(mod: LoadedModule, is_entry: bool) -> None:
    decls = [d for d in mod.ast.items if isinstance(d, A.TOP_LEVEL_DECLS)]
    mod.uses_export = any(d.exported for d in decls)
    for d in decls:
        names = [d.name] + ([v.name for v in d.variants] if isinstance(d, A.EnumDecl) else [])
        if not mod.uses_export or d.exported or is_entry:
            mod.public.update(names)
            if not getattr(d, "is_extern", False) and getattr(d, "body", True) is not None:
                mod.defines.update(names)
            continue
        for n in names:
            mod.hidden[n] = f"__import_{mod.key}_{n}"
        if not getattr(d, "is_extern", False):
            d.internal_name = mod.hidden[d.name]


class _Loader:
    """Depth-first loader; `order` receives modules in post-order (dependencies first)."""

    def __init__(self, include_dirs, std_root: str, cwd: str, target_os: str):
        self.include_dirs = list(include_dirs)
        self.std_root, self.cwd, self.target_os = std_root, cwd, target_os
        self.std_real = os.path.realpath(std_root)    # std_label's base, resolved once
        self.bag = DiagnosticBag()
        self.loaded: dict[str, LoadedModule] = {}        # by real path
        self.active: list[str] = []
        self.order: list[LoadedModule] = []

    def std_label(self, real: str) -> str:
        """`std/<file>` for a file of the stdlib root, else ""."""
        try:
            rel = os.path.relpath(real, self.std_real)
        except ValueError:                   # Windows: another drive
            return ""
        return "" if rel.startswith(os.pardir) or os.path.isabs(rel) else \
            "std/" + rel.replace(os.sep, "/")

    def load(self, path: str, display: str, span: Span | None, is_entry: bool):
        real = os.path.realpath(path)
        if real in self.loaded:
            return self.loaded[real]
        text = _read(path, display, span, self.bag)
        if text is None:
            return None
        try:
            tree = parse_source(text, display)
        except CompileError as e:
            self.bag.extend(e.diagnostics)
            return None
        key = sha1(real.encode("utf-8")).hexdigest()[:8]
        mod = LoadedModule(display, tree, key, label=self.std_label(real))
        _apply_visibility(mod, is_entry)
        self.loaded[real] = mod
        self.active.append(real)
        for imp in tree.imports:
            self.bind(mod, path, imp)
        self.active.pop()
        self.order.append(mod)
        return mod

    def bind(self, mod: LoadedModule, importer: str, imp: A.Import) -> None:
        if imp.guard is not None and imp.guard != self.target_os:
            return  # an off-target import is never looked up
        found = next((p for p in candidates(imp.path, importer, self.include_dirs,
                                             self.std_root, self.cwd, self.target_os)
                      if os.path.isfile(p)), None)
        if found is None:
            self.bag.error("E0101", f"cannot find module '{imp.path}'", imp.span,
                           help="looked in the stdlib root, mettle.deps roots, the "
                                "importing file's directory, -I dirs and the current dir")
            return
        real = os.path.realpath(found)
        if real in self.active:
            self.bag.warning("W0103", f"import cycle through '{imp.path}' skipped", imp.span)
            return
        target = self.load(found, found, imp.span, False)
        if target is None:
            return
        if imp.alias is None and imp.names is None and any(
                b.module is target and b.alias is None and b.names is None
                for b in mod.imports):
            return  # duplicate plain import
        names = None
        if imp.names is not None:
            names = [n.name for n in imp.names]
            for n in imp.names:
                if n.name in target.hidden:
                    self.bag.error("E0110", f"`{n.name}` is private to module "
                                   f"'{target.shown}'; only its exported names can be "
                                   "imported", n.span)
                elif n.name not in target.public:
                    self.bag.error("E0105", f"'{n.name}' is not a public name of "
                                   f"'{imp.path}'", n.span)
        mod.imports.append(ImportBinding(target, imp.alias, names, imp.span))


def _check_public_collisions(order: list[LoadedModule], bag: DiagnosticBag) -> None:
    """All public names share one scope, so two modules defining the same public name
    collide: reported at the first import (in load order) that brings in the second
    definer, naming both modules. Externs are exempt: they may be declared anywhere."""
    first_import: dict[int, Span] = {}
    for mod in order:
        for b in mod.imports:
            first_import.setdefault(id(b.module), b.span)
    owner: dict[str, LoadedModule] = {}
    for mod in order:
        for name in sorted(mod.defines):
            prev = owner.setdefault(name, mod)
            if prev is mod:
                continue
            span = first_import.get(id(mod)) or first_import.get(id(prev))
            bag.error("E0103", f"`{name}` is public in both '{prev.shown}' and "
                      f"'{mod.shown}'; the import brings two definitions into one scope",
                      span, help="export one of them under another name, or stop "
                                 "exporting one")


def load_program(entry_path: str | os.PathLike, include_dirs=(),
                 stdlib_dir: str | os.PathLike | None = None, *,
                 cwd: str | os.PathLike | None = None,
                 target_os: str = TARGET_OS) -> Program:
    """Load the entry file and all its imports; raise CompileError on any error."""
    here = _clean(os.fspath(cwd)) if cwd is not None else os.getcwd()
    loader = _Loader(include_dirs, stdlib_root(stdlib_dir, here), here, target_os)
    loader.load(_clean(os.fspath(entry_path)), str(entry_path), None, True)
    if not loader.bag.error_count:
        _check_public_collisions(loader.order, loader.bag)
    loader.bag.raise_if_errors()
    return Program(loader.order, [d for d in loader.bag.items if d.severity == "warning"])
