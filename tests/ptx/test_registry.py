"""The target registry: lookup, capabilities per architecture, `--print-target`."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from toolchain.compiler import targets as T
from toolchain.compiler.diagnostics import CompileError
from tests.support.mettle_cli import mettle
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)


def test_driver_targets_are_registered_and_selected_by_options():
    assert {"ptx", "spirv", "x86_64"} <= set(T.names())
    pick = lambda **kw: T.for_options(SimpleNamespace(**kw)).name   # noqa: E731
    assert pick(emit="ptx") == "ptx" and pick(emit="spirv") == "spirv"
    assert pick(emit="obj") == "x86_64" and pick(emit="exe", host_target=None) == "x86_64"
    with pytest.raises(CompileError) as info:
        T.lookup("vax")
    assert info.value.diagnostics[0].code == "E0090"


def test_registering_a_host_target_is_one_line():
    t = T.register(T.host_target("toy64", "toolchain.compiler.targets.x86_64:emit_object"))
    try:
        assert T.for_options(SimpleNamespace(emit="obj", host_target="toy64")) is t
        assert T.lookup("toy64").info() == T.TargetInfo("toy64", False, None)
    finally:
        T._REGISTRY.pop("toy64")


@pytest.mark.parametrize("arch, want", [
    ("portable", dict(arch="compute_75", ptxas_arch="sm_75", wmma=True, mma_sync=False,
                      wgmma=False, tma=False, cp_async=False)),
    ("sm_80", dict(arch="sm_80", ptxas_arch="sm_80", wmma=True, mma_sync=True, wgmma=False,
                   tma=False, cp_async=True)),
    ("sm_90a", dict(arch="sm_90a", ptxas_arch="sm_90a", wmma=True, mma_sync=True,
                    wgmma=True, tma=True, cp_async=True)),
    ("sm_90", dict(arch="sm_90", ptxas_arch="sm_90", wgmma=False, tma=True)),
    ("gb10", dict(arch="sm_121a", ptxas_arch="sm_121a", wgmma=False, tma=True,
                  mma_sync=True)),
    ("compute_70", dict(arch="compute_70", ptxas_arch=None, wmma=True, cp_async=False)),
])
def test_ptx_capabilities_follow_the_architecture(arch, want):
    r = T.resolve_target("ptx", arch)
    got = {**T.asdict(r.capabilities), "arch": r.arch, "ptxas_arch": r.ptxas_arch}
    assert {k: got[k] for k in want} == want
    assert r.capabilities.subgroup_width == 32 and r.info().subgroup_width == 32
    assert r.capabilities.limits.registers_per_sm == 65536


def test_isa_range_and_limits():
    r = T.resolve_target("ptx", "sm_90a", "8.3")
    assert (r.isa, r.capabilities.ptx_isa) == ("8.3", ("8.0", "9.0"))
    assert r.capabilities.limits.max_shared_memory_per_block == 227 * 1024
    assert T.resolve_target("ptx", "gb10").capabilities.limits.max_threads_per_sm == 1536
    spirv = T.lookup("spirv")
    assert spirv.info().subgroup_width is None and spirv.info().gpu


def _cli(*args):
    return mettle(*args)


def test_print_target_cli():
    out = _cli("--print-target", "--gpu-arch=sm_90a")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["target"], got["arch"], got["isa"], got["ptxas_arch"]) == \
        ("ptx", "sm_90a", "8.8", "sm_90a")
    assert got["capabilities"]["wgmma"] is True
    assert json.loads(_cli("--print-target", "--emit-spirv").stdout)["target"] == "spirv"
    bad = _cli("--print-target", "--gpu-arch=sm_9")
    assert bad.returncode == 1 and "error[E0501]" in bad.stderr and not bad.stdout


def test_resolving_loads_no_code_generator():
    code = ("import sys; from toolchain.compiler.targets import resolve_target;"
            "resolve_target('ptx', 'sm_90a');"
            "print(sorted(m for m in sys.modules if m.startswith('toolchain.compiler.targets.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) == ["toolchain.compiler.targets.ptx",
                                "toolchain.compiler.targets.ptx.isa",
                                "toolchain.compiler.targets.ptx.profiles"]
