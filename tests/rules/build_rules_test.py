"""End-to-end proofs for the Mettle Pants rules, driving the real `./pants` in temporary clones.

What each test proves (all runs are `--no-pantsd`, so reuse comes from the on-disk caches):
- the packaged //app:host directory runs as is (host + kernels.ptx side by side), and a
  SPIR-V kernel (checked by spirv-val) and a gpu_variant_select target build too;
- a second `package` executes no process except Pants' own uncacheable PATH probes;
- editing one kernel re-runs that kernel's compile and nothing of the host;
- a second clean checkout in another directory, with the local process cache off, re-runs
  every compile and produces byte-identical outputs, and no mettle action's command line or
  environment holds the checkout's path;
- bad field values fail with a message naming the target and field, never a traceback.

One clone is shared by the module (cost: ~1 Pants start-up per test on a loaded machine).
"""
from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.rules.pants_harness import (has_bootstrapped_pants, make_clone, run_pants,
                                       source_root, tail)

ROOT = source_root()
pytestmark = pytest.mark.skipif(not has_bootstrapped_pants(ROOT),
                                reason="Pants is not bootstrapped (run ./pants once)")

# Extra targets the first build also packages: a SPIR-V kernel and a variant selection.
EXTRA_BUILD = '''
mettle_kernel(name="vadd_spv", source="vadd.mettle", format="spirv")
mettle_kernel(name="vadd", source="vadd.mettle", gpu_arch="sm_90a")
gpu_variant_select(name="vadd_best", kernel=":vadd",
                   variants=["optimize=true", "optimize=false"], policy="pareto")
mettle_kernel(name="gemm", source="gemm.mettle", gpu_arch="sm_90a")
gpu_variant_select(name="gemm_best", kernel=":gemm",
                   variants=["tensor_tuple_budget=0", "tensor_tuple_budget=8"],
                   policy="occupancy")
'''
# One warp per 64x64 f16 region: its resident WMMA interior needs ~200 registers per lane.
GEMM = """
kernel gemm(a: uint16*, b: uint16*, c: float32*, d: float32*, pm: uint32, pn: uint32,
            pk: uint32, lda: uint32, ldb: uint32, ldc: uint32, ldd: uint32) {
  var row: uint32 = block.y * 64;
  var column: uint32 = block.x * 64;
  tensor_matmul(a, b, c, d, row, column, pm, pn, pk, shape: m64n64k16,
                a_type: f16, b_type: f16, accumulator_type: f32, result_type: f32,
                a_layout: row, b_layout: row, c_layout: row, d_layout: row,
                lda: lda, ldb: ldb, ldc: ldc, ldd: ldd);
}
"""
TARGETS = ("//app:host", "//ruletest:vadd_spv")
OUTPUTS = ("app/host", "app/kernels.ptx", "ruletest/vadd_spv.spv")
KERNEL_COMPILE = "Run mettle compile app/kernels.mettle -> kernels.ptx (sm_90a)"


def _prepare(clone: Path) -> Path:
    extra = clone / "ruletest"
    extra.mkdir()
    (extra / "vadd.mettle").write_text((clone / "app" / "kernels.mettle").read_text())
    (extra / "gemm.mettle").write_text(GEMM)
    (extra / "BUILD").write_text(EXTRA_BUILD)
    return clone


def _outputs(clone: Path) -> dict:
    return {rel: (clone / "dist" / rel).read_bytes() for rel in OUTPUTS}


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return _prepare(make_clone(ROOT, tmp_path_factory.mktemp("a") / "checkout"))


@pytest.fixture(scope="module")
def first(clone):
    run = run_pants(clone, "package", *TARGETS)
    assert run.returncode == 0, tail(run)
    return run, _outputs(clone)


def test_packaged_host_runs_beside_its_kernels(clone, first):
    dist = clone / "dist" / "app"
    ptx = (dist / "kernels.ptx").read_text()
    assert ".target sm_90a" in ptx and ".entry vadd" in ptx
    sidecar = json.loads((dist / "kernels.ptx.sig.json").read_text())   # for mettle.load
    assert [p["type"] for p in sidecar["kernels"][0]["params"]] == \
        ["float32*", "float32*", "float32*", "int32"]
    proc = subprocess.run([str(dist / "host")], capture_output=True, text=True, timeout=60)
    # Exit 2 + "no GPU" on machines without one; 0 + "vadd: OK" where a GPU is present.
    assert (proc.returncode, proc.stdout.split(":")[0].strip()) in ((2, "no GPU"), (0, "vadd"))


def test_spirv_kernel_builds_and_is_checked(clone, first):
    assert (clone / "dist/ruletest/vadd_spv.spv").read_bytes()[:4] == b"\x03\x02\x23\x07"
    assert run_spawned_or_cached(first[0], "Run spirv-val --target-env opencl2.0 vadd_spv.spv")


def run_spawned_or_cached(run, description: str) -> bool:
    """Whether the run executed `description` or had it cached (it was requested at all)."""
    return description in run.spawned() or f"Scheduling: {description}" in run.log


def test_variant_select_profiles_every_variant_and_reports_the_selector(clone, first):
    # Both variants of vadd assemble to the same resources, so the selector (rightly) picks
    # none; the rule must then fail and say why, after profiling each variant.
    run = run_pants(clone, "package", "//ruletest:vadd_best")
    assert run.returncode != 0
    assert "ruletest:vadd_best: the selector did not pick one variant" in run.log, tail(run)
    for name in ("v0_optimize-true", "v1_optimize-false"):
        assert run_spawned_or_cached(run, f"Run ptxas profile of variant {name} (sm_90a)")
    assert "Run ptxas select --policy pareto for vadd_best" in run.log


def test_variant_select_picks_a_winner_among_budget_variants(clone, first):
    # The tuple budget changes only the backend's choice (resident WMMA interior vs exact
    # replay); the replay variant needs far fewer registers, so `occupancy` selects it.
    run = run_pants(clone, "package", "//ruletest:gemm_best")
    assert run.returncode == 0, tail(run)
    out = clone / "dist" / "ruletest"
    report = json.loads((out / "gemm_best.selection.json").read_text())
    assert report["performance_claim"] is False
    entry = report["entries"]["gemm"]
    assert entry["selection"] == "v1_tensor_tuple_budget-8", entry
    assert "wmma.mma.sync" not in (out / "gemm_best.ptx").read_text()


def test_warm_package_runs_no_process(clone, first):
    run = run_pants(clone, "package", *TARGETS)
    assert run.returncode == 0, tail(run)
    # Pants' own per-run environment probes ("Searching for `bash` on PATH", "Test binary
    # /usr/bin/bash.", interpreter discovery) are never cached; our actions (all "Run ...")
    # and the PEX builds ("Building ...") must all be cache hits.
    executed = [d for d in run.spawned() if d.startswith(("Run ", "Build"))]
    assert executed == [], f"a warm package executed processes: {run.spawned()}"
    assert _outputs(clone) == first[1]


def test_edited_kernel_recompiles_only_that_kernel(clone, first):
    kernel = clone / "app" / "kernels.mettle"
    original = kernel.read_text()
    kernel.write_text(original + f"\n// edit {uuid.uuid4().hex}\n")
    try:
        run = run_pants(clone, "package", *TARGETS)
    finally:
        kernel.write_text(original)
    assert run.returncode == 0, tail(run)
    mettle = run.spawned("Run mettle")
    assert mettle == [KERNEL_COMPILE], mettle
    assert (clone / "dist/app/host").read_bytes() == first[1]["app/host"]


def test_second_checkout_elsewhere_is_byte_identical(first, tmp_path_factory):
    other = _prepare(make_clone(ROOT, tmp_path_factory.mktemp("b") / "deeper" / "other"))
    run = run_pants(other, "--no-local-cache", "package", *TARGETS)
    assert run.returncode == 0, tail(run)
    assert KERNEL_COMPILE in run.spawned("Run mettle"), "the compile did not re-run"
    assert _outputs(other) == first[1]
    lines = [ln for ln in run.log.splitlines()
             if "spawned local process" in ln and 'description: "Run mettle' in ln]
    assert lines and not [ln for ln in lines if str(other) in ln]


BAD_BUILD = 'mettle_kernel(name="k", source="k.mettle", gpu_arch="sm90")\n'


def test_bad_field_value_is_a_clear_error(clone):
    bad = clone / "badfield"
    bad.mkdir()
    (bad / "k.mettle").write_text("")
    (bad / "BUILD").write_text(BAD_BUILD)
    run = run_pants(clone, "package", "//badfield:k")
    assert run.returncode != 0
    assert "The `gpu_arch` field of the target badfield:k is 'sm90'" in run.log, tail(run)
    assert "Traceback" not in tail(run, 200)
