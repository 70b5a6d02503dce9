"""BUILD-file target types of the Mettle plugin: mettle_sources (one mettle_source per
`.mettle` file), mettle_kernel, mettle_host_binary and gpu_variant_select, with their fields.

Invariants: every field validates its raw value when the BUILD file is parsed, so a bad
value is an InvalidFieldException naming the target and the field (never a traceback from a
rule). Fields carry help text (`./pants help mettle_kernel`). This module runs inside Pants
(CPython 3.9): no 3.10+ syntax at run time.
"""
from __future__ import annotations

import re
from typing import Any, Optional, Tuple

from pants.core.util_rules.environments import EnvironmentField
from pants.engine.addresses import Address
from pants.engine.target import (
    COMMON_TARGET_FIELDS,
    BoolField,
    Dependencies,
    IntField,
    InvalidFieldException,
    MultipleSourcesField,
    OverridesField,
    OptionalSingleSourceField,
    SingleSourceField,
    SpecialCasedDependencies,
    StringField,
    StringSequenceField,
    Target,
    TargetFilesGenerator,
    generate_file_based_overrides_field_help_message,
    generate_multiple_sources_field_help_message,
)

# The spellings the compiler's --gpu-arch accepts (toolchain/compiler/cli.py).
GPU_ARCH_RE = re.compile(r"^(gb10|portable|sm_\d{2,3}a?|compute_\d{2,3}a?)$")
PTX_VERSION_RE = re.compile(r"^\d+\.\d+$")
CONST_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")   # --const NAME=VALUE
MAX_TENSOR_TUPLE_BUDGET = 4096  # the compiler refuses larger budgets
# Keys a gpu_variant_select variant may override on its kernel.
VARIANT_KEYS = ("gpu_arch", "tensor_tuple_budget", "ptx_version", "optimize")
POLICIES = ("pareto", "occupancy", "traffic", "measured")


def _invalid(alias: str, address: Address, why: str) -> InvalidFieldException:
    return InvalidFieldException(f"The `{alias}` field of the target {address} {why}")


class MettleSourceField(SingleSourceField):
    expected_file_extensions = (".mettle",)
    help = "The `.mettle` entry file, relative to the BUILD file's directory."


class MettleDependenciesField(Dependencies):
    help = (
        "Extra targets the compiler reads. Imported `.mettle` modules need no entry: every "
        "`import` is inferred (resolved as the compiler resolves it, standard library "
        "included) to the `mettle_source` target that owns the file."
    )


class MettleModuleSourceField(MettleSourceField):
    help = "The `.mettle` file (a module, a kernel file or a host program)."


class MettleSkipCheckField(BoolField):
    alias = "skip_check"
    default = False
    help = ("If true, `./pants check` and the warnings linter skip this file (e.g. a module "
            "that only compiles as part of the file that imports it), and an import of it "
            "that resolves to no file is not an error (e.g. an error-code example).")


class MettleSkipFmtField(BoolField):
    alias = "skip_fmt"
    default = False
    help = "If true, `./pants fmt` and `./pants lint` do not format this file."


class MettleSourceTarget(Target):
    alias = "mettle_source"
    core_fields = (*COMMON_TARGET_FIELDS, MettleDependenciesField, MettleModuleSourceField,
                   MettleSkipCheckField, MettleSkipFmtField)
    help = ("One `.mettle` file. Its imports are inferred dependencies, so a target that "
            "depends on it gets every module it imports, transitively.")


class MettleSourcesField(MultipleSourcesField):
    default = ("*.mettle",)
    expected_file_extensions = (".mettle",)
    help = generate_multiple_sources_field_help_message(
        "Example: `sources=['kernels.mettle', 'helpers/*.mettle', '!old.mettle']`")


class MettleSourcesOverridesField(OverridesField):
    help = generate_file_based_overrides_field_help_message(
        MettleSourceTarget.alias,
        """
        overrides={
            "gpu_driver.mettle": {"skip_check": True},
            ("a.mettle", "b.mettle"): {"tags": ["generated"]},
        }
        """,
    )


class MettleSourcesGeneratorTarget(TargetFilesGenerator):
    alias = "mettle_sources"
    core_fields = (*COMMON_TARGET_FIELDS, MettleSourcesField, MettleSourcesOverridesField)
    generated_target_cls = MettleSourceTarget
    copied_fields = COMMON_TARGET_FIELDS
    moved_fields = (MettleDependenciesField, MettleSkipCheckField, MettleSkipFmtField)
    help = ("Generate a `mettle_source` target for each file in `sources` (default "
            "`*.mettle`). `./pants tailor ::` writes one for every directory with `.mettle` "
            "files that no `mettle_source` owns.")


class MettleGpuArchField(StringField):
    alias = "gpu_arch"
    default = "sm_90a"
    help = (
        "The GPU the kernel is compiled for, as the compiler's `--gpu-arch` spells it: "
        "`sm_NN`, `sm_NNa`, `compute_NN`, `gb10` or `portable`. Default `sm_90a` (H100/H200)."
    )

    @classmethod
    def compute_value(cls, raw_value: Optional[str], address: Address) -> Optional[str]:
        value = super().compute_value(raw_value, address)
        if value is not None and not GPU_ARCH_RE.match(value):
            raise _invalid(cls.alias, address, f"is {value!r}; expected sm_NN, sm_NNa, "
                           "compute_NN, gb10 or portable (e.g. 'sm_90a').")
        return value


class MettleFormatField(StringField):
    alias = "format"
    default = "ptx"
    valid_choices = ("ptx", "spirv")
    help = "`ptx` produces `<name>.ptx` (NVIDIA PTX text); `spirv` produces `<name>.spv`."


class MettleOptimizeField(BoolField):
    alias = "optimize"
    default = True
    help = "Compile with `-O` (the optimizer); `False` compiles the unoptimized IR."


class MettleFpContractField(BoolField):
    alias = "fp_contract"
    default = True
    help = ("Let float multiply-add pairs fuse into FMA on the GPU (the compiler's default); "
            "`False` compiles with `--fp-contract=off`: every f32/f64 add/sub/mul rounded "
            "separately, bit-reproducible.")


class MettleHostTargetField(StringField):
    alias = "target"
    valid_choices = ("x86_64-linux", "aarch64-linux", "x86_64-windows")
    help = ("The machine the host program runs on (the compiler's `--target`): "
            "`x86_64-linux`, `aarch64-linux` (DGX Spark/GB10) or `x86_64-windows`. Default: "
            "the machine that builds it.")


class MettlePtxVersionField(StringField):
    alias = "ptx_version"
    help = "PTX ISA version `M.m` (the compiler's `--ptx-version`); default: the arch's minimum."

    @classmethod
    def compute_value(cls, raw_value: Optional[str], address: Address) -> Optional[str]:
        value = super().compute_value(raw_value, address)
        if value is not None and not PTX_VERSION_RE.match(value):
            raise _invalid(cls.alias, address, f"is {value!r}; expected 'M.m', e.g. '8.0'.")
        return value


class MettleTensorTupleBudgetField(IntField):
    alias = "tensor_tuple_budget"
    help = (
        "The compiler's `--gpu-tensor-tuple-budget` (0..4096; 0 or unset: the compiler's "
        "default)."
    )

    @classmethod
    def compute_value(cls, raw_value: Optional[int], address: Address) -> Optional[int]:
        value = super().compute_value(raw_value, address)
        if value is not None and not 0 <= value <= MAX_TENSOR_TUPLE_BUDGET:
            raise _invalid(cls.alias, address, f"is {value}; expected 0..4096.")
        return value


class MettleConstsField(StringSequenceField):
    alias = "consts"
    help = (
        "Values for top-level `const`s of the kernel source (the compiler's `--const "
        "NAME=VALUE`, one per entry): an integer, or a tile format `f16`, `bf16`, `f32`, "
        "e.g. `[\"HEAD_DIM=128\", \"ELEM=bf16\"]` builds one variant of one source."
    )

    @classmethod
    def compute_value(cls, raw_value: Optional[Any], address: Address) -> Optional[Tuple[str, ...]]:
        value = super().compute_value(raw_value, address)
        for item in value or ():
            name, eq, const = item.partition("=")
            if not eq or not CONST_NAME_RE.match(name) or not const:
                raise _invalid(cls.alias, address, f"has {item!r}; expected NAME=VALUE.")
        return value


class MettleValidateField(BoolField):
    alias = "validate"
    default = True
    help = (
        "Check the module after compiling it: PTX with `ptxas` (pinned nvidia-cuda-nvcc "
        "wheel) for `sm_*` arches, SPIR-V with `spirv-val` (the `[spirv-val]` tool)."
    )


class MettleSpirvTargetEnvField(StringField):
    alias = "spirv_target_env"
    default = "opencl2.0"
    valid_choices = ("opencl2.0", "opencl2.2", "spv1.0", "spv1.2")
    help = (
        "`spirv-val --target-env` for `format=\"spirv\"`. Modules using Float16 or 64-bit "
        "atomics validate only under `spv1.0`."
    )


class MettleKernelTarget(Target):
    alias = "mettle_kernel"
    core_fields = (
        *COMMON_TARGET_FIELDS,
        MettleSourceField,
        MettleDependenciesField,
        MettleGpuArchField,
        MettleFormatField,
        MettleOptimizeField,
        MettleFpContractField,
        MettlePtxVersionField,
        MettleTensorTupleBudgetField,
        MettleConstsField,
        MettleValidateField,
        MettleSpirvTargetEnvField,
        EnvironmentField,
    )
    help = (
        "A GPU kernel module compiled by the Mettle compiler: `<name>.ptx` or `<name>.spv`.\n\n"
        "`./pants package` writes it to `dist/<BUILD dir>/`. Example:\n\n"
        "    mettle_kernel(name=\"kernels\", source=\"kernels.mettle\", gpu_arch=\"sm_90a\")"
    )


class MettleKernelsField(SpecialCasedDependencies):
    alias = "kernels"
    help = (
        "Addresses of `mettle_kernel` or `gpu_variant_select` targets whose modules are "
        "placed next to the executable (as `<kernel name>.ptx`/`.spv`)."
    )


class MettleLinkArgsField(StringSequenceField):
    alias = "link_args"
    help = "Extra linker arguments (each becomes one `--link-arg`), e.g. `[\"-lm\"]`."


class MettleHostBinaryTarget(Target):
    alias = "mettle_host_binary"
    core_fields = (
        *COMMON_TARGET_FIELDS,
        MettleSourceField,
        MettleDependenciesField,
        MettleKernelsField,
        MettleLinkArgsField,
        MettleOptimizeField,
        MettleHostTargetField,
        EnvironmentField,
    )
    help = (
        "A host executable (x86-64 or AArch64 Linux, Windows x64; see `target`) built "
        "(compiled and linked) by the Mettle compiler.\n\n"
        "`./pants package` writes `dist/<BUILD dir>/<name>` and, beside it, every module of "
        "`kernels`, so the packaged directory runs as is. Example:\n\n"
        "    mettle_host_binary(name=\"host\", source=\"host.mettle\", kernels=[\":kernels\"])"
    )


class VariantKernelField(StringField):
    alias = "kernel"
    required = True
    help = "Address of the `mettle_kernel` whose variants are compared (e.g. `\":kernels\"`)."


def parse_variant(spec: str) -> Tuple[Tuple[str, str], ...]:
    """`"gpu_arch=sm_90a,tensor_tuple_budget=8"` -> sorted (key, value) pairs; ValueError."""
    pairs = {}
    for item in spec.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep or not value:
            raise ValueError(f"variant {spec!r}: expected key=value[,key=value...]")
        if key not in VARIANT_KEYS:
            raise ValueError(f"variant {spec!r}: unknown key {key!r} (known: "
                             f"{', '.join(VARIANT_KEYS)})")
        problem = _variant_value_problem(key, value)
        if problem:
            raise ValueError(f"variant {spec!r}: {key} {problem}")
        pairs[key] = value
    return tuple(sorted(pairs.items()))


def _variant_value_problem(key: str, value: str) -> Optional[str]:
    """Why `value` is not valid for the kernel field `key`, or None."""
    if key == "gpu_arch" and not GPU_ARCH_RE.match(value):
        return f"{value!r} is not sm_NN, sm_NNa, compute_NN, gb10 or portable"
    if key == "ptx_version" and not PTX_VERSION_RE.match(value):
        return f"{value!r} is not 'M.m'"
    if key == "optimize" and value.lower() not in ("true", "false"):
        return f"{value!r} is not true or false"
    if key == "tensor_tuple_budget" and not (
            value.isdigit() and 0 <= int(value) <= MAX_TENSOR_TUPLE_BUDGET):
        return f"{value!r} is not an integer in 0..{MAX_TENSOR_TUPLE_BUDGET}"
    return None


class VariantsField(StringSequenceField):
    alias = "variants"
    required = True
    help = (
        "Two or more variants of `kernel`, each `key=value[,key=value]` over the kernel's "
        "fields `gpu_arch`, `tensor_tuple_budget`, `ptx_version`, `optimize`, e.g. "
        "`[\"tensor_tuple_budget=8\", \"tensor_tuple_budget=32\"]`. All must target one "
        "`sm_*` arch family the ptxas profiler can assemble for."
    )

    @classmethod
    def compute_value(cls, raw_value: Optional[Any], address: Address) -> Optional[Tuple[str, ...]]:
        value = super().compute_value(raw_value, address)
        if value is None or len(value) < 2:
            raise _invalid(cls.alias, address, "needs at least two variants.")
        parsed = set()
        for spec in value:
            try:
                pairs = parse_variant(spec)
            except ValueError as e:
                raise _invalid(cls.alias, address, f"has a bad entry: {e}.")
            if pairs in parsed:
                raise _invalid(cls.alias, address, f"lists {spec!r} twice.")
            parsed.add(pairs)
        return value


class VariantMeasurementsField(OptionalSingleSourceField):
    alias = "measurements"
    expected_file_extensions = (".json",)
    help = (
        "Timings JSON (tools/gpu/variant_measurements.schema.json, from "
        "tools/gpu/collect_measurements.py on a GPU); required by `policy=\"measured\"`."
    )


class VariantPolicyField(StringField):
    alias = "policy"
    default = "pareto"
    valid_choices = POLICIES
    help = (
        "The selector policy of tools/gpu/ptxas_select.py. `pareto`, `occupancy` and "
        "`traffic` are static (ptxas profiles only); `measured` needs `measurements`."
    )


class VariantModelField(StringField):
    alias = "model"
    default = "sm_90"
    help = "The selector's resource model (`sm_90`, `sm_121`, or a model JSON path)."


class GpuVariantSelectTarget(Target):
    alias = "gpu_variant_select"
    core_fields = (
        *COMMON_TARGET_FIELDS,
        VariantKernelField,
        VariantsField,
        VariantMeasurementsField,
        VariantPolicyField,
        VariantModelField,
        EnvironmentField,
    )
    help = (
        "Builds every variant of a `mettle_kernel`, profiles each with the ptxas profiler "
        "(tools/gpu/ptxas_profile.py) and keeps the one tools/gpu/ptxas_select.py selects. "
        "`./pants package` writes `<name>.ptx` (the winner) and `<name>.selection.json`. "
        "Every entry function of the module must select the same variant, else it is an "
        "error. Example:\n\n"
        "    gpu_variant_select(name=\"vadd_best\", kernel=\":kernels\",\n"
        "        variants=[\"tensor_tuple_budget=8\", \"tensor_tuple_budget=32\"])"
    )

    def validate(self) -> None:
        policy = self[VariantPolicyField].value
        has_timings = self[VariantMeasurementsField].value is not None
        if policy == "measured" and not has_timings:
            raise InvalidFieldException(
                f"The target {self.address} has `policy=\"measured\"` but no `measurements`.")
        if policy != "measured" and has_timings:
            raise InvalidFieldException(
                f"The target {self.address} sets `measurements` but `policy={policy!r}` "
                "ignores them; use `policy=\"measured\"`.")
