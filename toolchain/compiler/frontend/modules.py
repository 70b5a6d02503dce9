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
  that the module does not make public. Parse errors keep their own codes. Everything is
  collected and raised together as one CompileError.
"""
from __future__ import annotations

from _sha1 import sha1   # hashlib.sha1's digest without loading OpenSSL (~3 ms a compile)
import os
from ...records import dataclass, field
from pathlib import Path

from . import ast as A
from ..diagnostics import CompileError, Diagnostic, DiagnosticBag, Span
from .parser import parse_source

TARGET_OS = "linux"
REPO_STD = Path(__file__).resolve().parents[3] / "std"
PACKAGED_STD = Path(__file__).resolve().parents[2] / "std"   # `pip install .` puts it here


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
    hidden: dict[str, str] = field(default_factory=dict)
    uses_export: bool = False
    imports: list[ImportBinding] = field(default_factory=list)


@dataclass
class Program:
    modules: list[LoadedModule]     # dependency order, entry last
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def entry(self) -> LoadedModule:
        return self.modules[-1]


def stdlib_root(explicit: str | os.PathLike | None, cwd: Path) -> Path:
    if explicit is not None:
        return Path(explicit)
    if REPO_STD.is_dir():
        return REPO_STD
    if PACKAGED_STD.is_dir():
        return PACKAGED_STD
    return cwd / "stdlib"


def _with_ext(spec: str) -> str:
    return spec if Path(spec).suffix else spec + ".mettle"


def _deps_roots(importer_dir: Path) -> list[tuple[str, Path]]:
    """(name, dir) pairs from mettle.deps files, nearest directory first."""
    roots = []
    for d in [importer_dir, *importer_dir.parents]:
        deps = d / "mettle.deps"
        if not deps.is_file():
            continue
        try:
            lines = deps.read_text("utf-8", "replace").splitlines()
        except OSError:
            continue
        for line in lines:
            name, eq, target = line.partition("=")
            if eq and name.strip() and not line.lstrip().startswith("#"):
                roots.append((name.strip(), d / target.strip()))
    return roots


def candidates(spec: str, importer: Path, include_dirs, std_root: Path, cwd: Path,
               target_os: str = TARGET_OS) -> list[Path]:
    """Every path tried for `spec`, in lookup order (the first existing file wins)."""
    rel = _with_ext(spec)
    if Path(spec).is_absolute():
        return [Path(rel)]
    out: list[Path] = []
    if spec.startswith("std/"):
        rest = spec[4:]
        if not Path(spec).suffix:
            out.append(std_root / f"{rest}.{target_os}.mettle")
        out.append(std_root / _with_ext(rest))
    head, _, tail = rel.partition("/")
    if tail:
        out += [root / tail for name, root in _deps_roots(importer.parent) if name == head]
    out.append(importer.parent / rel)
    out += [Path(d) / rel for d in include_dirs]
    out.append(cwd / rel)
    return out


def _read(path: Path, display: str, span: Span | None, bag: DiagnosticBag) -> str | None:
    try:
        data = path.read_bytes()
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
            continue
        for n in names:
            mod.hidden[n] = f"__import_{mod.key}_{n}"
        if not getattr(d, "is_extern", False):
            d.internal_name = mod.hidden[d.name]


class _Loader:
    """Depth-first loader; `order` receives modules in post-order (dependencies first)."""

    def __init__(self, include_dirs, std_root: Path, cwd: Path, target_os: str):
        self.include_dirs = list(include_dirs)
        self.std_root, self.cwd, self.target_os = std_root, cwd, target_os
        self.bag = DiagnosticBag()
        self.loaded: dict[Path, LoadedModule] = {}
        self.active: list[Path] = []
        self.order: list[LoadedModule] = []

    def load(self, path: Path, display: str, span: Span | None, is_entry: bool):
        real = path.resolve()
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
        key = sha1(str(real).encode("utf-8")).hexdigest()[:8]
        mod = LoadedModule(display, tree, key)
        _apply_visibility(mod, is_entry)
        self.loaded[real] = mod
        self.active.append(real)
        for imp in tree.imports:
            self.bind(mod, path, imp)
        self.active.pop()
        self.order.append(mod)
        return mod

    def bind(self, mod: LoadedModule, importer: Path, imp: A.Import) -> None:
        if imp.guard is not None and imp.guard != self.target_os:
            return  # an off-target import is never looked up
        found = next((p for p in candidates(imp.path, importer, self.include_dirs,
                                             self.std_root, self.cwd, self.target_os)
                      if p.is_file()), None)
        if found is None:
            self.bag.error("E0101", f"cannot find module '{imp.path}'", imp.span,
                           help="looked in the stdlib root, mettle.deps roots, the "
                                "importing file's directory, -I dirs and the current dir")
            return
        real = found.resolve()
        if real in self.active:
            self.bag.warning("W0103", f"import cycle through '{imp.path}' skipped", imp.span)
            return
        target = self.load(found, str(found), imp.span, False)
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
                if n.name not in target.public:
                    self.bag.error("E0105", f"'{n.name}' is not a public name of "
                                   f"'{imp.path}'", n.span)
        mod.imports.append(ImportBinding(target, imp.alias, names, imp.span))


def load_program(entry_path: str | os.PathLike, include_dirs=(),
                 stdlib_dir: str | os.PathLike | None = None, *,
                 cwd: str | os.PathLike | None = None,
                 target_os: str = TARGET_OS) -> Program:
    """Load the entry file and all its imports; raise CompileError on any error."""
    here = Path(cwd) if cwd is not None else Path.cwd()
    loader = _Loader(include_dirs, stdlib_root(stdlib_dir, here), here, target_os)
    entry = Path(entry_path)
    loader.load(entry, str(entry_path), None, True)
    loader.bag.raise_if_errors()
    return Program(loader.order, [d for d in loader.bag.items if d.severity == "warning"])
