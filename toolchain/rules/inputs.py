"""The input digest of one Mettle compile/link/check action: the entry file and the sources
of the target's transitive dependencies (the modules it imports, standard library included,
are inferred dependencies), plus any `mettle.deps` files the compiler reads beside them.

Invariants: paths in the digest are repository-relative (so `entry` and `--stdlib` are
sandbox-relative and identical in every checkout); nothing else is added, so an action
re-runs only when a module it imports changes.
"""
from __future__ import annotations

from dataclasses import dataclass

from pants.core.util_rules.source_files import SourceFiles, SourceFilesRequest
from pants.engine.addresses import Address
from pants.engine.fs import Digest, MergeDigests, PathGlobs
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import SourcesField, TransitiveTargets, TransitiveTargetsRequest

from toolchain.rules.dependency_inference import ancestor_deps_files
from toolchain.rules.tools import MettleStdlib


@dataclass(frozen=True)
class MettleInputsRequest:
    address: Address          # the target whose dependencies are inputs too
    source: SourcesField      # its entry `.mettle` file


@dataclass(frozen=True)
class MettleInputs:
    digest: Digest
    entry: str                # the entry file's path in `digest`
    stdlib_root: str          # the --stdlib directory in `digest`


@rule(desc="Gather a Mettle action's inputs")
async def mettle_inputs(request: MettleInputsRequest, stdlib: MettleStdlib) -> MettleInputs:
    transitive = await Get(TransitiveTargets, TransitiveTargetsRequest([request.address]))
    sources = await Get(SourceFiles, SourceFilesRequest(
        [request.source, *(t[SourcesField] for t in transitive.dependencies
                           if t.has_field(SourcesField))]))
    entry = await Get(SourceFiles, SourceFilesRequest([request.source]))
    deps_files = await Get(Digest, PathGlobs(sorted(
        {d for f in sources.snapshot.files for d in ancestor_deps_files(f)})))
    digest = await Get(Digest, MergeDigests([sources.snapshot.digest, deps_files]))
    return MettleInputs(digest, entry.files[0], stdlib.root)


def rules():
    return collect_rules()
