"""Dependency inference for Mettle: every `import` of a `.mettle` file becomes a dependency
on the `mettle_source` target that owns the imported file.

Invariants: the plugin never parses Mettle itself. One cached process per file runs the
compiler's own scanner (`mettle imports FILE --stdlib ROOT`, frontend/import_scan.py), which
prints each import's location and the paths the compiler would try for it, in the
compiler's order, for each OS it applies to (`import ... if windows` has only Windows
candidates; `std/x` tries `x.<os>.mettle` first). The first of those paths that exists in
the repository is the module, exactly as in a compile whose working directory is the
repository root (which is what every Mettle action's sandbox is). An import that resolves
to no file, or to a file no `mettle_source` owns, is an error naming the importing file and
line, except in a `skip_check` source (a file meant not to compile, such as an error-code
example whose helper module exists only in the docs): there, an import that resolves to no
file adds no dependency. A `mettle_kernel`/`mettle_host_binary` depends on the `mettle_source` of its own
`source` (so its imports come transitively), or on its imports directly when none owns it.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, List, Tuple

from pants.backend.python.util_rules.pex import VenvPexProcess
from pants.engine.addresses import Address
from pants.engine.fs import Digest, MergeDigests, PathGlobs, Paths
from pants.engine.process import ProcessResult
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import (AllTargets, FieldSet, HydratedSources, HydrateSourcesRequest,
                                 InferDependenciesRequest, InferredDependencies,
                                 InvalidFieldException, Targets)
from pants.engine.unions import UnionRule
from pants.util.frozendict import FrozenDict
from pants.util.logging import LogLevel

from toolchain.rules.target_types import (MettleDependenciesField, MettleModuleSourceField,
                                          MettleSkipCheckField, MettleSourceField)
from toolchain.rules.tools import TOOL_ENV, MettleCompiler, MettleStdlib

DEPS_FILE = "mettle.deps"   # package roots the compiler reads (frontend/modules.py)


class UnresolvedMettleImport(InvalidFieldException):
    """An import the build cannot satisfy; the message starts with `file:line:col:`."""


class AllMettleSourceTargets(Targets):
    pass


@rule(desc="Find all mettle_source targets", level=LogLevel.DEBUG)
def all_mettle_source_targets(targets: AllTargets) -> AllMettleSourceTargets:
    return AllMettleSourceTargets(t for t in targets if t.has_field(MettleModuleSourceField))


@dataclass(frozen=True)
class MettleSourceMapping:
    """File path -> the one `mettle_source` owning it (files with several owners apart)."""

    owners: FrozenDict[str, Address]
    ambiguous: FrozenDict[str, Tuple[Address, ...]]


@rule(desc="Map .mettle files to their mettle_source targets", level=LogLevel.DEBUG)
def map_mettle_sources(targets: AllMettleSourceTargets) -> MettleSourceMapping:
    by_file: Dict[str, List[Address]] = defaultdict(list)
    for tgt in targets:
        by_file[tgt[MettleModuleSourceField].file_path].append(tgt.address)
    return MettleSourceMapping(
        FrozenDict((f, a[0]) for f, a in sorted(by_file.items()) if len(a) == 1),
        FrozenDict((f, tuple(sorted(a))) for f, a in sorted(by_file.items()) if len(a) > 1))


@dataclass(frozen=True)
class MettleImport:
    spec: str                                   # as written: "std/io", "helper"
    location: str                               # "app/host.mettle:8:1"
    candidates: Tuple[Tuple[str, Tuple[str, ...]], ...]   # (os, paths in lookup order)


@dataclass(frozen=True)
class MettleImports:
    file: str
    imports: Tuple[MettleImport, ...]


@dataclass(frozen=True)
class MettleImportsRequest:
    source: MettleSourceField


def ancestor_deps_files(path: str) -> List[str]:
    """The mettle.deps files the compiler may read for an importer at `path`."""
    out, d = [], os.path.dirname(path)
    while True:
        out.append(os.path.join(d, DEPS_FILE) if d else DEPS_FILE)
        if not d:
            return out
        d = os.path.dirname(d)


@rule(desc="Scan a Mettle file's imports", level=LogLevel.DEBUG)
async def scan_mettle_imports(request: MettleImportsRequest, compiler: MettleCompiler,
                              stdlib: MettleStdlib) -> MettleImports:
    sources = await Get(HydratedSources, HydrateSourcesRequest(request.source))
    path = sources.snapshot.files[0]
    deps_files = await Get(Digest, PathGlobs(ancestor_deps_files(path)))
    digest = await Get(Digest, MergeDigests([sources.snapshot.digest, deps_files]))
    result = await Get(ProcessResult, VenvPexProcess(
        compiler.pex, argv=("imports", path, "--stdlib", stdlib.root), input_digest=digest,
        extra_env=TOOL_ENV, description=f"Scan the imports of {path}", level=LogLevel.DEBUG))
    report = json.loads(result.stdout.decode())
    return MettleImports(path, tuple(
        MettleImport(imp["path"], f"{path}:{imp['line']}:{imp['column']}",
                     tuple((os_name, tuple(paths))
                           for os_name, paths in sorted(imp["candidates"].items())))
        for imp in report["imports"]))


@dataclass(frozen=True)
class MettleDependenciesInferenceFieldSet(FieldSet):
    required_fields = (MettleSourceField, MettleDependenciesField)

    source: MettleSourceField
    dependencies: MettleDependenciesField
    skip_check: MettleSkipCheckField          # only mettle_source has it (else the default)


class InferMettleDependencies(InferDependenciesRequest):
    infer_from = MettleDependenciesInferenceFieldSet


def resolve_import(imp: MettleImport, present: frozenset, mapping: MettleSourceMapping,
                   importer: Address, missing_ok: bool = False
                   ) -> Tuple[List[Address], List[str]]:
    """(owners of the modules `imp` loads on each OS, problems), the compiler's way.
    `missing_ok`: a module found nowhere is no problem (the importer is not compiled)."""
    found, problems, missing = [], [], []
    where = f"{imp.location}: import \"{imp.spec}\" (of {importer})"
    for os_name, paths in imp.candidates:
        module = next((p for p in paths if p in present), None)
        if module is None:
            missing.append((os_name, paths))
        elif module in mapping.ambiguous:
            owners = ", ".join(str(a) for a in mapping.ambiguous[module])
            problems.append(f"{where} loads {module}, which several mettle_source targets "
                            f"own ({owners}); keep one.")
        elif module not in mapping.owners:
            problems.append(f"{where} loads {module}, which no mettle_source target owns; "
                            "run `./pants tailor ::` or add it to a `mettle_sources` target.")
        else:
            found.append(mapping.owners[module])
    if missing and not missing_ok:
        on = "" if len(missing) == len(imp.candidates) else \
            " on " + " and ".join(os_name for os_name, _ in missing)
        tried = ", ".join(dict.fromkeys(p for _, paths in missing for p in paths))
        how = ("absolute paths cannot be build inputs" if os.path.isabs(imp.spec)
               else f"the compiler looks for {tried}")
        problems.append(f"{where}: cannot find the module{on}; {how}.")
    return found, problems


def _literal(path: str) -> bool:
    """A relative path PathGlobs reads literally (no glob characters, no `!` exclusion)."""
    return not os.path.isabs(path) and not path.startswith("!") and \
        not any(c in path for c in "*?[")


@rule(desc="Infer Mettle dependencies from imports")
async def infer_mettle_dependencies(request: InferMettleDependencies,
                                    mapping: MettleSourceMapping) -> InferredDependencies:
    field_set = request.field_set
    address = field_set.address
    owner = mapping.owners.get(field_set.source.file_path)
    if owner is not None and owner != address:
        return InferredDependencies([owner])       # its imports come through that target
    scanned = await Get(MettleImports, MettleImportsRequest(field_set.source))
    wanted = sorted({p for imp in scanned.imports for _, paths in imp.candidates
                     for p in paths if _literal(p)})
    present = frozenset((await Get(Paths, PathGlobs(wanted))).files) if wanted \
        else frozenset()
    deps, problems = set(), []
    for imp in scanned.imports:
        found, bad = resolve_import(imp, present, mapping, address,
                                    missing_ok=bool(field_set.skip_check.value))
        deps.update(a for a in found if a != address)
        problems += bad
    if problems:
        raise UnresolvedMettleImport("\n".join(problems))
    return InferredDependencies(sorted(deps))


def rules():
    return [*collect_rules(),
            UnionRule(InferDependenciesRequest, InferMettleDependencies)]
