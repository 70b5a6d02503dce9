"""Options of the Mettle plugin: `[mettle]` (where the compiler, stdlib and tool requirements
come from) and `[spirv-val]` (the pinned spirv-val binary).

Invariants: every tool an action runs is named here by a target address (built by Pants
from declared sources and the lockfile) or by a sha256-pinned download, never looked up on
the host PATH. Defaults match this repository; a team changes them in pants.toml.
"""
from __future__ import annotations

from pants.base.build_environment import get_buildroot
from pants.core.util_rules.external_tool import TemplatedExternalTool
from pants.engine.platform import Platform
from pants.option.option_types import StrListOption, StrOption
from pants.option.subsystem import Subsystem


class MettleSubsystem(Subsystem):
    options_scope = "mettle"
    help = "The Mettle compiler toolchain as used by mettle_kernel/mettle_host_binary targets."

    compiler = StrOption(
        default="//:mettle",
        help="Address of the `pex_binary` whose sources make up the compiler (run from a PEX "
        "built from them, entry point `toolchain.compiler.cli:main`).",
    )
    stdlib = StrOption(
        default="//std:mettle",
        help="Address of the target owning the standard library `.mettle` files; its "
        "directory is passed as `--stdlib`.",
    )
    ptxas_requirements = StrListOption(
        default=["//third_party:reqs#nvidia-cuda-nvcc"],
        help="Requirement targets that provide `ptxas` (the pinned nvidia-cuda-nvcc wheel).",
    )
    variant_tools = StrListOption(
        default=[
            "//tools:tools",  # tools/gpu/ptxas_profile.py, ptxas_select.py and their data
            "//third_party:reqs#nvidia-cuda-nvcc",
            "//third_party:reqs#jsonschema",
        ],
        help="Targets of the ptxas profiler/selector PEX used by gpu_variant_select.",
    )


class SpirvValTool(TemplatedExternalTool):
    options_scope = "spirv-val"
    name = "spirv-val"
    help = (
        "spirv-val from SPIRV-Tools, checked by sha256 and passed to actions as an input "
        "digest. The default URL is the statically linked binary that "
        "tools/bootstrap/20-spirv-tools.sh unpacks (Debian 12's spirv-tools 2023.1); "
        "`{buildroot}` in the URL template is replaced by the repository root."
    )
    default_version = "2023.1"
    default_known_versions = [
        "2023.1|linux_x86_64|49044b2fffb78a93ab7016d46a50d156088598162de8b8a523f3308ea5b3f2f8"
        "|1516104",
    ]
    default_url_template = "file://{buildroot}/.bootstrap/spirv-tools/usr/bin/spirv-val"
    default_url_platform_mapping = {"linux_x86_64": "linux_x86_64"}

    def generate_url(self, plat: Platform) -> str:
        # The download is content-addressed (sha256 above), so the absolute URL never reaches
        # an action's cache key; only the file's digest does.
        platform = (self.url_platform_mapping or {}).get(plat.value, "")
        return self.url_template.format(version=self.version, platform=platform,
                                        buildroot=get_buildroot())

    def generate_exe(self, plat: Platform) -> str:
        return "./spirv-val"
