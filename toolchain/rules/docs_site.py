"""`mettle_docs_site`: the documentation as a static HTML site with search (MkDocs, Material
theme), packaged by `./pants package //docs:site` into dist/docs/site/.

The target's sources are the Markdown pages; its dependencies bring the MkDocs
requirements of the lockfile and the site's config, hooks and Mettle Pygments lexer
(tools/docs/). The rule builds a PEX of those and runs `mkdocs build` in a sandbox holding
every source file of the target's transitive closure, so the site is a function of the
checked-in pages, config and lockfile only.
"""
from __future__ import annotations

from dataclasses import dataclass

from pants.backend.python.target_types import ConsoleScript
from pants.backend.python.util_rules.pex import PexRequest, VenvPex, VenvPexProcess
from pants.backend.python.util_rules.pex_from_targets import PexFromTargetsRequest
from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.core.util_rules.source_files import SourceFiles, SourceFilesRequest
from pants.engine.addresses import Addresses
from pants.engine.fs import Digest, RemovePrefix
from pants.engine.process import ProcessResult
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import (COMMON_TARGET_FIELDS, Dependencies, MultipleSourcesField,
                                 SourcesField, StringField, Target, TransitiveTargets,
                                 TransitiveTargetsRequest)
from pants.engine.unions import UnionRule

from toolchain.rules.tools import TOOL_ENV

SITE_DIR = "dist/docs/site"     # the config's site_dir, relative to the sandbox root


class DocsSiteSourcesField(MultipleSourcesField):
    default = ("**/*.md",)
    expected_file_extensions = (".md",)
    help = "The Markdown pages of the site."


class DocsSiteConfigField(StringField):
    alias = "config"
    required = True
    help = "The MkDocs config file, relative to the repository root (a dependency's file)."


class DocsSiteDependenciesField(Dependencies):
    help = "The MkDocs requirements and the config's files (config, hooks, lexer)."


class MettleDocsSiteTarget(Target):
    alias = "mettle_docs_site"
    core_fields = (*COMMON_TARGET_FIELDS, DocsSiteSourcesField, DocsSiteConfigField,
                   DocsSiteDependenciesField)
    help = "A static HTML documentation site built by MkDocs (`./pants package`)."


@dataclass(frozen=True)
class DocsSiteFieldSet(PackageFieldSet):
    required_fields = (DocsSiteSourcesField, DocsSiteConfigField)

    sources: DocsSiteSourcesField
    config: DocsSiteConfigField


@rule(desc="Build the documentation site")
async def package_docs_site(field_set: DocsSiteFieldSet) -> BuiltPackage:
    transitive = await Get(TransitiveTargets, TransitiveTargetsRequest([field_set.address]))
    sources = await Get(SourceFiles, SourceFilesRequest(
        [t[SourcesField] for t in transitive.closure if t.has_field(SourcesField)]))
    mkdocs = await Get(VenvPex, PexRequest, await Get(PexRequest, PexFromTargetsRequest(
        Addresses([field_set.address]), output_filename="mkdocs.pex", internal_only=True,
        main=ConsoleScript("mkdocs"), description="Build the MkDocs PEX")))
    result = await Get(ProcessResult, VenvPexProcess(
        mkdocs, argv=("build", "--quiet", "-f", field_set.config.value),
        input_digest=sources.snapshot.digest, output_directories=(SITE_DIR,),
        extra_env=TOOL_ENV, description=f"mkdocs build {field_set.address}"))
    site = await Get(Digest, RemovePrefix(result.output_digest, "dist"))
    return BuiltPackage(site, (BuiltPackageArtifact("docs/site"),))


def rules():
    return [*collect_rules(), UnionRule(PackageFieldSet, DocsSiteFieldSet)]
