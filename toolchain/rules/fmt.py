"""`./pants fmt` and `./pants lint` for Mettle: the compiler's formatter, `mettle fmt FILE...`
(rewrites the files in place), run by the `mettle-fmt` tool over `mettle_source` files.

Invariants: one process per batch of files, its input exactly those files; `lint` runs the
same process and reports the files whose output differs (Pants' formatter-as-linter
behaviour), so `./pants lint ::` fails on any unformatted file. Files with `skip_fmt=True`
are left alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from pants.backend.python.util_rules.pex import VenvPexProcess
from pants.core.goals.fmt import FmtResult, FmtTargetsRequest
from pants.core.util_rules.partitions import PartitionerType
from pants.engine.process import FallibleProcessResult
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import FieldSet, Target
from pants.option.option_types import SkipOption
from pants.option.subsystem import Subsystem
from pants.util.logging import LogLevel

from toolchain.rules.target_types import MettleModuleSourceField, MettleSkipFmtField
from toolchain.rules.tools import TOOL_ENV, MettleCompiler, compile_succeeded


class MettleFmt(Subsystem):
    options_scope = "mettle-fmt"
    name = "mettle-fmt"
    help = "The Mettle formatter (`mettle fmt`), run by `./pants fmt` and `./pants lint`."

    skip = SkipOption("fmt", "lint")


@dataclass(frozen=True)
class MettleFmtFieldSet(FieldSet):
    required_fields = (MettleModuleSourceField,)

    source: MettleModuleSourceField

    @classmethod
    def opt_out(cls, tgt: Target) -> bool:
        return bool(tgt.get(MettleSkipFmtField).value)


class MettleFmtRequest(FmtTargetsRequest):
    field_set_type = MettleFmtFieldSet
    tool_subsystem = MettleFmt
    partitioner_type = PartitionerType.DEFAULT_SINGLE_PARTITION


def fmt_argv(files) -> tuple:
    return ("fmt", *files)


@rule(desc="Format with mettle fmt", level=LogLevel.DEBUG)
async def mettle_fmt(request: MettleFmtRequest.Batch, compiler: MettleCompiler) -> FmtResult:
    result = await Get(FallibleProcessResult, VenvPexProcess(
        compiler.pex, argv=fmt_argv(request.files), input_digest=request.snapshot.digest,
        output_files=request.files, extra_env=TOOL_ENV,
        description=f"Run mettle fmt on {len(request.files)} files", level=LogLevel.DEBUG))
    compile_succeeded(result, "mettle fmt")      # e.g. a syntax error: its diagnostic
    return await FmtResult.create(request, result)


def rules():
    return [*collect_rules(), *MettleFmtRequest.rules()]
