"""Rules that materialize the tools Mettle actions run: the compiler PEX, the standard
library, the ptxas PEX, the variant profiler/selector PEX and spirv-val.

Invariants: each tool is a digest built by Pants from declared targets (our sources and the
lockfile) or a sha256-pinned download, so an action's cache key is a function of content
only; nothing is taken from the host PATH. Every process env is given explicitly.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pants.backend.python.target_types import EntryPoint
from pants.backend.python.util_rules.pex import PexRequest, VenvPex
from pants.backend.python.util_rules.pex_from_targets import PexFromTargetsRequest
from pants.core.util_rules.external_tool import DownloadedExternalTool, ExternalToolRequest
from pants.core.util_rules.source_files import SourceFiles, SourceFilesRequest
from pants.engine.addresses import Addresses, UnparsedAddressInputs
from pants.engine.fs import CreateDigest, Digest, FileContent
from pants.engine.platform import Platform
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import SourcesField, Targets

from toolchain.rules.subsystems import MettleSubsystem, SpirvValTool

LAUNCHER_MODULE = "mettle_pex_launcher"
# Actions see no host environment; these keep tool output stable across machines.
TOOL_ENV = {"LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "SOURCE_DATE_EPOCH": "0"}


class MettleCompileFailed(Exception):
    """A compile or link the compiler refused: its located diagnostics, nothing else."""


def compile_succeeded(result, what: str) -> None:
    """Raise MettleCompileFailed with the compiler's own diagnostics (stderr) when the
    process failed: the user sees `error[E....]` and ` --> file:line:col`, not a dump of
    the process."""
    if result.exit_code != 0:
        diagnostics = result.stderr.decode(errors="replace").rstrip()
        raise MettleCompileFailed(f"{what} failed (exit {result.exit_code}):\n{diagnostics}")


@dataclass(frozen=True)
class MettleCompiler:
    pex: VenvPex


@dataclass(frozen=True)
class MettleStdlib:
    digest: Digest
    root: str  # the --stdlib directory, relative to the sandbox root


@dataclass(frozen=True)
class PtxasTool:
    """Run as `pex, argv=("ptxas", ...)`: execs the pinned wheel's ptxas."""

    pex: VenvPex


@dataclass(frozen=True)
class VariantTools:
    """Run as `pex, argv=("module", "tools.gpu.ptxas_profile", ...)`."""

    pex: VenvPex


@dataclass(frozen=True)
class SpirvVal:
    digest: Digest
    exe: str


@dataclass(frozen=True)
class ToolPexRequest:
    specs: tuple  # target addresses from an option
    option: str   # that option's name, for error messages
    name: str     # the PEX's name


@dataclass(frozen=True)
class ToolPex:
    pex: VenvPex


@rule(desc="Build the Mettle compiler PEX")
async def mettle_compiler(mettle: MettleSubsystem) -> MettleCompiler:
    addresses = await Get(Addresses, UnparsedAddressInputs(
        (mettle.compiler,), owning_address=None,
        description_of_origin="the option `[mettle].compiler`"))
    request = await Get(PexRequest, PexFromTargetsRequest(
        addresses, output_filename="mettle.pex", internal_only=True,
        main=EntryPoint.parse("toolchain.compiler.cli:main"),
        description="Build the Mettle compiler PEX"))
    return MettleCompiler(await Get(VenvPex, PexRequest, request))


@rule(desc="Gather the Mettle standard library")
async def mettle_stdlib(mettle: MettleSubsystem) -> MettleStdlib:
    targets = await Get(Targets, UnparsedAddressInputs(
        (mettle.stdlib,), owning_address=None,
        description_of_origin="the option `[mettle].stdlib`"))
    sources = await Get(SourceFiles, SourceFilesRequest(
        [t[SourcesField] for t in targets if t.has_field(SourcesField)]))
    return MettleStdlib(sources.snapshot.digest, targets[0].address.spec_path or ".")


@rule
async def tool_pex(request: ToolPexRequest) -> ToolPex:
    addresses = await Get(Addresses, UnparsedAddressInputs(
        request.specs, owning_address=None,
        description_of_origin=f"the option `[mettle].{request.option}`"))
    source = Path(__file__).with_name("pex_launcher.py").read_bytes()
    launcher = await Get(Digest, CreateDigest([FileContent(f"{LAUNCHER_MODULE}.py", source)]))
    pex_request = await Get(PexRequest, PexFromTargetsRequest(
        addresses, output_filename=f"{request.name}.pex", internal_only=True,
        main=EntryPoint.parse(f"{LAUNCHER_MODULE}:main"), additional_sources=launcher,
        description=f"Build the {request.name} PEX"))
    return ToolPex(await Get(VenvPex, PexRequest, pex_request))


@rule(desc="Build the ptxas PEX")
async def ptxas_tool(mettle: MettleSubsystem) -> PtxasTool:
    tool = await Get(ToolPex, ToolPexRequest(
        tuple(mettle.ptxas_requirements), "ptxas_requirements", "ptxas"))
    return PtxasTool(tool.pex)


@rule(desc="Build the variant tools PEX")
async def variant_tools(mettle: MettleSubsystem) -> VariantTools:
    tool = await Get(ToolPex, ToolPexRequest(
        tuple(mettle.variant_tools), "variant_tools", "variant_tools"))
    return VariantTools(tool.pex)


@rule(desc="Fetch spirv-val")
async def spirv_val(tool: SpirvValTool, platform: Platform) -> SpirvVal:
    downloaded = await Get(DownloadedExternalTool, ExternalToolRequest,
                           tool.get_request(platform))
    return SpirvVal(downloaded.digest, downloaded.exe)


def rules():
    return collect_rules()
