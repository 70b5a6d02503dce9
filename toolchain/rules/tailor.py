"""`./pants tailor` for Mettle: a `mettle_sources` target for every directory with `.mettle`
files that no `mettle_source` owns.

Invariants: ownership means a `mettle_source` (a `resources` target listing the same files,
as tests use for data, does not count); nothing but `mettle_sources` is ever proposed, one
per directory, with the default name and `sources` (`*.mettle`).
"""
from __future__ import annotations

from dataclasses import dataclass

from pants.core.goals.tailor import PutativeTarget, PutativeTargets, PutativeTargetsRequest
from pants.engine.fs import PathGlobs, Paths
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.unions import UnionRule
from pants.util.dirutil import group_by_dir
from pants.util.logging import LogLevel

from toolchain.rules.dependency_inference import MettleSourceMapping
from toolchain.rules.target_types import MettleSourcesGeneratorTarget


@dataclass(frozen=True)
class PutativeMettleTargetsRequest(PutativeTargetsRequest):
    pass


@rule(level=LogLevel.DEBUG, desc="Determine candidate mettle_sources targets to create")
async def find_putative_mettle_targets(request: PutativeMettleTargetsRequest,
                                       mapping: MettleSourceMapping) -> PutativeTargets:
    files = await Get(Paths, PathGlobs, request.path_globs("*.mettle"))
    owned = set(mapping.owners) | set(mapping.ambiguous)
    unowned = sorted(set(files.files) - owned)
    return PutativeTargets(
        PutativeTarget.for_target_type(MettleSourcesGeneratorTarget, path=dirname, name=None,
                                       triggering_sources=sorted(names))
        for dirname, names in sorted(group_by_dir(unowned).items()))


def rules():
    return [*collect_rules(), UnionRule(PutativeTargetsRequest, PutativeMettleTargetsRequest)]
