"""`gpu_variant_select`: compile every variant of a kernel, profile each with the ptxas
profiler (tools/gpu/ptxas_profile.py), select with tools/gpu/ptxas_select.py, keep the winner.

Invariants: one cached action per variant compile and per variant profile, plus one select
action; the selector's JSON report is kept as `<name>.selection.json`. The winner must be the
selection of every entry function, else the build fails and says which entries disagree
(the selector's `null` means "no safe choice", which is never silently overridden).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import List, Tuple

from pants.backend.python.util_rules.pex import VenvPexProcess
from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.core.util_rules.source_files import SourceFiles, SourceFilesRequest
from pants.core.util_rules.environments import EnvironmentField
from pants.engine.addresses import UnparsedAddressInputs
from pants.engine.fs import (AddPrefix, CreateDigest, Digest, DigestContents, FileContent,
                             MergeDigests)
from pants.engine.process import ProcessResult
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import (InvalidFieldException, Targets, WrappedTarget,
                                 WrappedTargetRequest)
from pants.engine.unions import UnionRule
from pants.util.logging import LogLevel

from toolchain.rules.compile_kernel import CompiledKernel, CompileKernelRequest
from toolchain.rules.kernel_package import (SelectedVariant, SelectedVariantRequest,
                                            compile_request)
from toolchain.rules.target_types import (MettleFormatField, MettleKernelTarget,
                                          VariantKernelField, VariantMeasurementsField,
                                          VariantModelField, VariantPolicyField,
                                          VariantsField, parse_variant)
from toolchain.rules.tools import TOOL_ENV, VariantTools

PROFILE_DIR = "profiles"


def candidate_name(index: int, spec: str) -> str:
    """A file-name-safe candidate name that still says which variant it is."""
    return f"v{index}_" + re.sub(r"[^A-Za-z0-9_.]+", "-", spec).strip("-")


def winner(selection: dict, address: str) -> str:
    """The candidate every entry selected; InvalidFieldException explains any other case."""
    picks = {e: r.get("selection") for e, r in sorted(selection.get("entries", {}).items())}
    chosen = set(picks.values())
    if len(chosen) == 1 and None not in chosen:
        return chosen.pop()
    detail = "; ".join(f"{e}: {p or 'none'} ({selection['entries'][e].get('reason', '')})"
                       for e, p in picks.items())
    raise InvalidFieldException(
        f"{address}: the selector did not pick one variant for every entry ({detail}). "
        "Change the variants or the policy.")


@dataclass(frozen=True)
class ProfileRequest:
    kernel: CompiledKernel
    name: str


@dataclass(frozen=True)
class Profile:
    digest: Digest            # holds exactly `path`
    path: str


@rule(desc="Profile a kernel variant with ptxas", level=LogLevel.DEBUG)
async def profile_variant(request: ProfileRequest, tools: VariantTools) -> Profile:
    arch = request.kernel.ptxas_arch      # resolved by the compiler's target registry
    if arch is None:
        raise InvalidFieldException(
            f"variant {request.name}: its gpu_arch resolves to no target that ptxas can "
            "assemble (sm_75 or newer); gpu_variant_select needs a real GPU arch.")
    path = f"{PROFILE_DIR}/{request.name}.profile.json"
    result = await Get(ProcessResult, VenvPexProcess(
        tools.pex, argv=("module", "tools.gpu.ptxas_profile", "--arch", arch, "-o", path,
                         request.kernel.path),
        input_digest=request.kernel.digest, output_files=(path,), extra_env=TOOL_ENV,
        description=f"Run ptxas profile of variant {request.name} ({arch})",
        level=LogLevel.INFO))
    return Profile(result.output_digest, path)


@dataclass(frozen=True)
class SelectorRequest:
    name: str
    profiles: Tuple[Profile, ...]
    measurements: VariantMeasurementsField
    policy: str
    model: str


@dataclass(frozen=True)
class SelectorReport:
    digest: Digest            # holds exactly `path`
    path: str
    text: str


@rule(desc="Select a GPU kernel variant")
async def select_variant(request: SelectedVariantRequest, tools: VariantTools) -> SelectedVariant:
    wrapped = await Get(WrappedTarget, WrappedTargetRequest(
        request.address, description_of_origin="<infallible>"))
    tgt = wrapped.target
    kernels = await Get(Targets, UnparsedAddressInputs(
        [tgt[VariantKernelField].value], owning_address=tgt.address,
        description_of_origin=f"the `kernel` field of {tgt.address}"))
    kernel_tgt = kernels[0]
    if not isinstance(kernel_tgt, MettleKernelTarget) or \
            kernel_tgt[MettleFormatField].value != "ptx":
        raise InvalidFieldException(
            f"The `kernel` field of {tgt.address} names {kernel_tgt.address}; it must be a "
            "`mettle_kernel` with format=\"ptx\" (the profiler reads PTX).")
    specs = tgt[VariantsField].value or ()
    names = [candidate_name(i, s) for i, s in enumerate(specs)]
    compiled = await MultiGet(
        Get(CompiledKernel, CompileKernelRequest,
            compile_request(kernel_tgt, name, dict(parse_variant(spec))))
        for name, spec in zip(names, specs))
    profiles = await MultiGet(
        Get(Profile, ProfileRequest(k, n)) for k, n in zip(compiled, names))
    report = await Get(SelectorReport, SelectorRequest(
        tgt.address.target_name, tuple(profiles), tgt[VariantMeasurementsField],
        tgt[VariantPolicyField].value, tgt[VariantModelField].value))
    best = compiled[names.index(winner(json.loads(report.text), str(tgt.address)))]
    best_contents = await Get(DigestContents, Digest, best.digest)
    renamed = f"{tgt.address.target_name}.ptx"
    digest = await Get(Digest, CreateDigest([FileContent(renamed, best_contents[0].content)]))
    return SelectedVariant(CompiledKernel(digest, renamed, best.ptxas_arch), report.digest,
                           report.path)


@rule(desc="Run the variant selector", level=LogLevel.DEBUG)
async def run_selector(request: SelectorRequest, tools: VariantTools) -> SelectorReport:
    timings = await Get(SourceFiles, SourceFilesRequest([request.measurements]))
    inputs = await Get(Digest, MergeDigests(
        [timings.snapshot.digest, *(p.digest for p in request.profiles)]))
    path = f"{request.name}.selection.json"
    argv: List[str] = ["module", "tools.gpu.ptxas_select", "--model", request.model,
                       "--policy", request.policy, "-o", path]
    if timings.files:
        argv += ["--measurements", timings.files[0]]
    argv += [p.path for p in request.profiles]
    result = await Get(ProcessResult, VenvPexProcess(
        tools.pex, argv=argv, input_digest=inputs, output_files=(path,), extra_env=TOOL_ENV,
        description=f"Run ptxas select --policy {request.policy} for {request.name}",
        level=LogLevel.INFO))
    contents = await Get(DigestContents, Digest, result.output_digest)
    return SelectorReport(result.output_digest, path, contents[0].content.decode())


@dataclass(frozen=True)
class GpuVariantSelectFieldSet(PackageFieldSet):
    required_fields = (VariantKernelField, VariantsField)

    kernel: VariantKernelField
    variants: VariantsField
    # Where its actions run (tools/remote/BUILD): remote workers or this machine.
    environment: EnvironmentField


@rule(desc="Package a selected GPU kernel variant")
async def package_selected(field_set: GpuVariantSelectFieldSet) -> BuiltPackage:
    selected = await Get(SelectedVariant, SelectedVariantRequest(field_set.address))
    merged = await Get(Digest, MergeDigests([selected.kernel.digest, selected.selection]))
    spec_path = field_set.address.spec_path
    digest = await Get(Digest, AddPrefix(merged, spec_path)) if spec_path else merged
    prefix = f"{spec_path}/" if spec_path else ""
    return BuiltPackage(digest, (BuiltPackageArtifact(prefix + selected.kernel.path),
                                 BuiltPackageArtifact(prefix + selected.selection_path)))


def rules():
    return [*collect_rules(), UnionRule(PackageFieldSet, GpuVariantSelectFieldSet)]
