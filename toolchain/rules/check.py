"""`./pants check` and the warnings half of `./pants lint` for Mettle.

`check` runs `mettle check FILE` (the frontend and the shared GPU verifiers, no code
generation, no output file) once per file: every `mettle_source`, and every
`mettle_kernel`/`mettle_host_binary` entry (a host binary with its `target`'s OS). It fails
on any error and prints the compiler's located diagnostics.

`lint` (the `mettle-warnings` linter) runs the very same process (so after `check` it is a
cache hit) and fails when the compiler printed a warning.

Invariants: one cached process per (file, its transitive modules, flags); inputs are those
of a compile (inputs.py), so a check re-runs only when the file or a module it imports
changes. Targets with `skip_check=True` are skipped by both.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pants.backend.python.util_rules.pex import VenvPexProcess
from pants.core.goals.check import CheckRequest, CheckResult, CheckResults
from pants.core.goals.lint import LintResult, LintTargetsRequest
from pants.core.util_rules.partitions import PartitionerType
from pants.engine.addresses import Address
from pants.engine.process import FallibleProcessResult
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import FieldSet, Target
from pants.engine.unions import UnionRule
from pants.option.option_types import SkipOption
from pants.option.subsystem import Subsystem
from pants.util.logging import LogLevel

from toolchain.rules.inputs import MettleInputs, MettleInputsRequest
from toolchain.rules.target_types import (MettleHostTargetField, MettleSkipCheckField,
                                          MettleSourceField)
from toolchain.rules.tools import TOOL_ENV, MettleCompiler

WARNING_MARK = "warning["     # how the compiler's text diagnostics start a warning


@dataclass(frozen=True)
class MettleCheckFieldSet(FieldSet):
    required_fields = (MettleSourceField,)

    source: MettleSourceField
    host_target: MettleHostTargetField    # a mettle_host_binary's `target`; else unset

    @classmethod
    def opt_out(cls, tgt: Target) -> bool:
        return bool(tgt.get(MettleSkipCheckField).value)


@dataclass(frozen=True)
class MettleFileCheckRequest:
    address: Address
    source: MettleSourceField
    host_target: Optional[str]


@dataclass(frozen=True)
class MettleFileChecked:
    file: str
    exit_code: int
    stdout: str
    stderr: str

    @property
    def has_warnings(self) -> bool:
        return WARNING_MARK in self.stderr


@rule(desc="Check a Mettle file", level=LogLevel.DEBUG)
async def check_mettle_file(request: MettleFileCheckRequest,
                            compiler: MettleCompiler) -> MettleFileChecked:
    inputs = await Get(MettleInputs, MettleInputsRequest(request.address, request.source))
    argv = ["check", inputs.entry, "--stdlib", inputs.stdlib_root]
    if request.host_target:
        argv.append(f"--target={request.host_target}")
    result = await Get(FallibleProcessResult, VenvPexProcess(
        compiler.pex, argv=tuple(argv), input_digest=inputs.digest, extra_env=TOOL_ENV,
        description=f"Run mettle check {inputs.entry}", level=LogLevel.DEBUG))
    return MettleFileChecked(inputs.entry, result.exit_code, result.stdout.decode(),
                             result.stderr.decode())


def _file_request(field_set: MettleCheckFieldSet) -> MettleFileCheckRequest:
    return MettleFileCheckRequest(field_set.address, field_set.source,
                                  field_set.host_target.value)


class MettleCheckRequest(CheckRequest):
    field_set_type = MettleCheckFieldSet
    tool_name = "mettle"


@rule(desc="Check Mettle sources (frontend + GPU verifier)", level=LogLevel.DEBUG)
async def mettle_check(request: MettleCheckRequest) -> CheckResults:
    checked = await MultiGet(Get(MettleFileChecked, MettleFileCheckRequest,
                                 _file_request(fs)) for fs in request.field_sets)
    unique = {(c.file, c.exit_code, c.stdout, c.stderr): c for c in checked}
    results = [CheckResult(c.exit_code, c.stdout, c.stderr, partition_description=c.file)
               for c in sorted(unique.values(), key=lambda c: c.file)
               if c.exit_code or c.stderr]
    if not results:    # a clean run still reports (Pants treats no result as skipped)
        results.append(CheckResult(0, "", "", partition_description=f"{len(unique)} files"))
    return CheckResults(results, checker_name="mettle")


class MettleWarnings(Subsystem):
    options_scope = "mettle-warnings"
    name = "mettle-warnings"
    help = ("The compiler's warnings as a linter: `./pants lint` fails when `mettle check` "
            "prints a warning for a Mettle file.")

    skip = SkipOption("lint")


class MettleWarningsRequest(LintTargetsRequest):
    field_set_type = MettleCheckFieldSet
    tool_subsystem = MettleWarnings
    partitioner_type = PartitionerType.DEFAULT_SINGLE_PARTITION


@rule(desc="Lint Mettle files for compiler warnings", level=LogLevel.DEBUG)
async def mettle_warnings(request: MettleWarningsRequest.Batch[MettleCheckFieldSet, Any]
                          ) -> LintResult:
    checked = await MultiGet(Get(MettleFileChecked, MettleFileCheckRequest,
                                 _file_request(fs)) for fs in request.elements)
    unique = sorted({(c.file, c.stderr): c for c in checked}.values(), key=lambda c: c.file)
    bad = [c for c in unique if c.exit_code or c.has_warnings]
    return LintResult(1 if bad else 0, "", "".join(c.stderr for c in bad),
                      linter_name=MettleWarnings.options_scope)


def rules():
    return [*collect_rules(), UnionRule(CheckRequest, MettleCheckRequest),
            *MettleWarningsRequest.rules()]
