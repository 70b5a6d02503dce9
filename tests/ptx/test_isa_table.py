"""The PTX instruction table (targets/ptx/isa.py): the one place target facts are written.
The registry's capabilities, `--print-target`, the profiles' `has`/`need` and the optimizer's
target facts all come from it, and no other file compares ISA versions or SM numbers."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from toolchain.compiler import targets as T
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.targets.ptx import isa, resolve_profile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PTX_DIR = os.path.join(ROOT, "toolchain", "compiler", "targets", "ptx")
PROFILES = ("portable", "compute_75", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a",
            "sm_120a", "gb10")


def test_every_row_is_well_formed():
    for f in isa.FORMS:
        assert f.feature and f.spelling and f.operands, f
        assert f.isa in {(a, b) for a in range(4, 10) for b in range(10)}, f
        assert not f.only or f.sm == min(f.only), f
    assert len(isa.FEATURES) == len({f.feature for f in isa.FORMS})


@pytest.mark.parametrize("arch", PROFILES)
def test_registry_capabilities_come_from_the_table(arch):
    r = T.resolve_target("ptx", arch)
    p = resolve_profile(arch, None)
    caps = r.capabilities
    assert set(caps.features) == {n for n in isa.FEATURES if p.has(n)}
    assert (caps.wmma, caps.mma_sync, caps.wgmma, caps.tma, caps.cp_async) == \
        tuple(p.has(n) for n in ("wmma.f16", "mma.sync", "wgmma", "cp.async.bulk.tensor",
                                 "cp.async"))
    assert caps.limits.max_shared_memory_per_block == p.shared_memory_per_block
    assert set(r.info().features) == set(caps.features)


@pytest.mark.parametrize("arch, has, lacks", [
    ("portable", {"wmma.f16", "subgroup.sync", "atom.scoped"},
     {"L1::evict_last", "cp.async", "mma.sync", "redux.sync"}),
    ("sm_80", {"L1::evict_last", "cp.async", "mma.sync", "mma.sp", "redux.sync"},
     {"mma.fp8.k32", "wgmma", "cp.async.bulk.tensor"}),
    ("sm_89", {"mma.fp8.k32", "mma.fp8.k16", "cvt.f16x2.fp8"}, {"wgmma"}),
    ("sm_90a", {"wgmma", "tensormap.replace", "cp.async.bulk.tensor"}, {"mma.block_scale"}),
    ("sm_100a", {"cp.async.bulk.tensor", "fence.proxy.tensormap"},
     {"wgmma", "tensormap.replace"}),
    ("gb10", {"mma.block_scale", "mma.sp::ordered_metadata"}, {"wgmma"}),
])
def test_features_follow_the_target(arch, has, lacks):
    p = resolve_profile(arch, None)
    assert {n for n in has if not p.has(n)} == set()
    assert {n for n in lacks if p.has(n)} == set()


def test_need_names_the_rows_requirement():
    p = resolve_profile("sm_75", None)
    with pytest.raises(CompileError) as e:
        p.need("cp.async", "asynchronous copy")
    d = e.value.diagnostics[0]
    assert d.code == "E0504" and "asynchronous copy needs PTX ISA 7.0 and target sm_80" \
        in d.message
    resolve_profile("sm_80", None).need("cp.async", "asynchronous copy")


def test_print_target_prints_the_features():
    out = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--print-target",
                          "--gpu-arch=portable"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)["capabilities"]["features"]
    assert "wmma.f16" in got and "L1::evict_last" not in got and "cp.async" not in got


@pytest.mark.parametrize("arch", PROFILES)
def test_print_target_prints_what_the_lowerings_ask(arch):
    """The object `--print-target` prints (ResolvedTarget.as_json) states, for every
    profile, exactly the facts the lowerings and the optimizer get from the profile."""
    profile = resolve_profile(arch, None)
    caps = T.resolve_target("ptx", arch).as_json()["capabilities"]
    assert list(caps["features"]) == [f for f in isa.FEATURES if profile.has(f)]
    assert {k: caps[k] for k in ("wmma", "mma_sync", "wgmma", "tma", "cp_async")} == {
        "wmma": profile.has("wmma.f16"), "mma_sync": profile.has("mma.sync"),
        "wgmma": profile.has("wgmma"), "tma": profile.has("cp.async.bulk.tensor"),
        "cp_async": profile.has("cp.async")}
    assert caps["limits"]["max_shared_memory_per_block"] == profile.shared_memory_per_block
    assert caps["subgroup_width"] == isa.SUBGROUP_WIDTH


# A comparison of versions or generations outside the table and the profile that reads it:
# `at_least(`, `require(`, `.sm >=`, `.isa <`, `sm == 90`, ...
_SCATTERED = re.compile(r"\bat_least\(|\.require\(|\.(sm|isa)\s*(==|!=|>=|<=|<|>|\bin\b)|"
                        r"\bsm\s*(==|>=|<=|<|>)\s*\d|arch_specific\b|\.virtual\b")


def test_no_target_fact_outside_the_table():
    bad = []
    for dirpath, _, names in os.walk(PTX_DIR):
        for n in names:
            path = os.path.join(dirpath, n)
            if not n.endswith(".py") or n in ("isa.py", "profiles.py"):
                continue
            with open(path, encoding="utf-8") as f:
                for k, line in enumerate(f, 1):
                    if _SCATTERED.search(line.split("#")[0]):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{k}: {line.strip()}")
    for path in ("opt", "driver.py"):
        full = os.path.join(ROOT, "toolchain", "compiler", path)
        files = [full] if full.endswith(".py") else \
            [os.path.join(full, n) for n in os.listdir(full) if n.endswith(".py")]
        for fp in files:
            text = open(fp, encoding="utf-8").read()
            if re.search(r"\bsm_\d+\b(?!a?`)|\bat_least\(|from \.\.targets", text):
                bad.append(os.path.relpath(fp, ROOT))
    assert bad == []


def test_the_registry_reads_the_tables_subgroup_width():
    # the registry keeps its own constant only to stay importable without the PTX package
    assert T.PTX_SUBGROUP_WIDTH == isa.SUBGROUP_WIDTH
    assert T.resolve_target("ptx", "sm_80").capabilities.subgroup_width == isa.SUBGROUP_WIDTH


def test_the_reference_page_lists_every_feature_as_the_table_says():
    doc = open(os.path.join(ROOT, "docs", "reference", "ptx-target-features.md"),
               encoding="utf-8").read()
    for name in isa.FEATURES:
        (i, _), f = isa.requirement(name), isa.FEATURES[name][0]
        cells = ["yes" if resolve_profile(p, None).has(name) else "" for p in PROFILES]
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{name}` |")),
                   None)
        assert row is not None, f"{name} is missing from the reference page"
        got = [c.strip() for c in row.strip("|").split("|")]
        assert got[1] == f"{i[0]}.{i[1]}" and got[3:] == cells, row
