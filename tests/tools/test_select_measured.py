"""ptxas_select.py --policy=measured: binding, the statistical gate and its thresholds."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.tools.variant_tool_helpers import (DATA, REPO, function, measurements, run_tool,
                                              write_json, write_profile)

pytest.importorskip("jsonschema")


@pytest.fixture
def profs(tmp_path):
    return {n: write_profile(tmp_path / f"{n}.json", {"k": function()}) for n in "abc"}


def select(tmp_path, profiles: dict, doc: dict, *flags):
    timings = write_json(tmp_path / "timings.json", doc)
    out = tmp_path / "sel.json"
    out.unlink(missing_ok=True)
    proc = run_tool("ptxas_select.py", "--policy=measured", f"--measurements={timings}",
                    *flags, "-o", out, *profiles.values())
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def jitter(base: int, rounds: int) -> list[int]:
    return [base + (i * 7) % 5 for i in range(rounds)]


def test_clear_winner_is_selected_with_recorded_thresholds(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    proc, doc = select(tmp_path, two, measurements(two, {"a": jitter(100, 31),
                                                         "b": jitter(120, 31)}))
    assert proc.returncode == 0, proc.stderr
    ent = doc["entries"]["k"]
    assert ent["selection"] == "a" and ent["measured"]["provisional"] == "a"
    cmp = ent["measured"]["comparisons"]["b"]
    assert (cmp["positive_pairs"], cmp["wins"], cmp["passed"]) == (31, 31, True)
    assert doc["performance_claim"] is False
    th = doc["measurements"]["thresholds"]
    assert (th["min_positive_pairs"], th["alpha"], th["min_median_speedup"]) == (21, 0.01, 1.01)
    assert doc["measurements"]["run"]["device_uuid"].startswith("GPU-")
    assert ent["measured"]["workload_sha256"] == "a" * 64


def test_fewer_than_21_pairs_gives_null_and_fails_closed(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    doc = measurements(two, {"a": jitter(100, 20), "b": jitter(150, 20)})
    proc, sel = select(tmp_path, two, doc)
    ent = sel["entries"]["k"]
    assert ent["selection"] is None and "20 positive pairs < 21" in \
        ent["measured"]["comparisons"]["b"]["failed"][0]
    proc, sel = select(tmp_path, two, doc, "--require-selection")
    assert proc.returncode == 3
    proc, sel = select(tmp_path, two, doc, "--min-pairs=20")
    assert sel["entries"]["k"]["selection"] == "a"
    assert sel["measurements"]["thresholds"]["min_positive_pairs"] == 20


def test_zero_samples_do_not_count_as_positive_pairs(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    a = jitter(100, 22)
    a[5] = 0                                    # an invalid sample: 21 positive pairs remain
    _, sel = select(tmp_path, two, measurements(two, {"a": a, "b": jitter(130, 22)}))
    assert sel["entries"]["k"]["measured"]["comparisons"]["b"]["positive_pairs"] == 21
    assert sel["entries"]["k"]["selection"] == "a"
    a[6] = 0
    _, sel = select(tmp_path, two, measurements(two, {"a": a, "b": jitter(130, 22)}))
    assert sel["entries"]["k"]["selection"] is None


def test_significant_but_tiny_speedup_is_not_selected(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    doc = measurements(two, {"a": [1000] * 40, "b": [1005] * 40})      # 0.5 % faster
    _, sel = select(tmp_path, two, doc)
    cmp = sel["entries"]["k"]["measured"]["comparisons"]["b"]
    assert cmp["wins"] == 40 and cmp["p_value"] < 1e-9
    assert sel["entries"]["k"]["selection"] is None and "speedup" in cmp["failed"][0]
    _, sel = select(tmp_path, two, doc, "--min-speedup=1.004")
    assert sel["entries"]["k"]["selection"] == "a"


def test_bonferroni_correction_depends_on_the_number_of_candidates(tmp_path, profs):
    # 21 rounds, a beats b in 17 (p = 2*7547/2^21 = 0.0072): significant at 0.01 alone,
    # not at 0.01/2 once a third candidate makes it two comparisons.
    a = [100] * 21
    b = [120] * 17 + [90] * 4
    two = {n: profs[n] for n in "ab"}
    _, sel = select(tmp_path, two, measurements(two, {"a": a, "b": b}))
    assert sel["entries"]["k"]["selection"] == "a"
    assert sel["entries"]["k"]["measured"]["alpha_per_comparison"] == 0.01
    _, sel = select(tmp_path, profs, measurements(profs, {"a": a, "b": b, "c": [130] * 21}))
    ent = sel["entries"]["k"]
    assert ent["selection"] is None and ent["measured"]["alpha_per_comparison"] == 0.005
    assert ent["measured"]["comparisons"]["c"]["passed"] is True
    assert ent["measured"]["comparisons"]["b"]["passed"] is False


def test_lower_median_without_enough_paired_wins_is_not_selected(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    a = [100] * 11 + [200] * 20           # median 200
    b = [150] * 11 + [190] * 20           # median 190, but wins only 20 of 31 rounds
    _, sel = select(tmp_path, two, measurements(two, {"a": a, "b": b}))
    ent = sel["entries"]["k"]
    assert ent["measured"]["provisional"] == "b" and ent["selection"] is None


def test_a_significant_loss_never_passes_the_gate():
    from fractions import Fraction

    from tools.gpu import measured_selection as ms
    cmp = ms._comparison([200] * 25, [100] * 25, ms.Thresholds(), Fraction(1, 100))
    assert cmp["losses"] == 25 and cmp["p_value"] < 1e-6 and cmp["passed"] is False
    assert any("in favour of the provisional best" in f for f in cmp["failed"])


def test_binding_errors(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    doc = measurements(profs, {"a": [1] * 21, "c": [2] * 21})   # c's profile not given
    proc, _ = select(tmp_path, two, doc)
    assert proc.returncode == 1 and "matches none of the given profiles" in proc.stderr
    doc = measurements(two, {"a": [1] * 21, "b": [2] * 21})
    doc["run"]["rounds"] = 22
    proc, _ = select(tmp_path, two, doc)
    assert "21 samples for 22 paired rounds" in proc.stderr
    doc = measurements(two, {"a": [1] * 21, "b": [2] * 21}, entry="nope")
    proc, _ = select(tmp_path, two, doc)
    assert "no profile defines" in proc.stderr and "Traceback" not in proc.stderr


def test_unmeasured_eligible_candidate_blocks_selection(tmp_path, profs):
    doc = measurements(profs, {"a": jitter(100, 25), "b": jitter(200, 25)})
    _, sel = select(tmp_path, profs, doc)
    ent = sel["entries"]["k"]
    assert ent["selection"] is None and "without measurements: c" in ent["reason"]


def test_launch_shape_sets_threads_per_block(tmp_path, profs):
    two = {n: profs[n] for n in "ab"}
    _, sel = select(tmp_path, two, measurements(two, {"a": [1] * 21, "b": [2] * 21},
                                                block=(64, 2, 1)))
    assert sel["entries"]["k"]["threads_per_block"] == 128


def test_h200_saxpy_timings_select_vec4(tmp_path):
    """Real collector output from an H200: the static model prefers the scalar loop (fewer
    static global ops) while the timings select the float4 variant."""
    src = DATA / "h200_saxpy"
    profiles = [shutil.copy(src / f"saxpy_{v}.profile.json", tmp_path) for v in
                ("scalar", "vec4")]
    out = tmp_path / "sel.json"
    proc = run_tool("ptxas_select.py", "--policy=measured",
                    f"--measurements={src / 'timings.json'}", "-o", out, *profiles)
    assert proc.returncode == 0, proc.stderr
    ent = json.loads(out.read_text())["entries"]["saxpy"]
    assert ent["selection"] == "saxpy_vec4"
    static = json.loads((src / "static_selection.json").read_text())
    assert static["entries"]["saxpy"]["selection"] == "saxpy_scalar"


def test_local_profiles_are_byte_identical_to_the_h200_ones(ptxas_path, tmp_path):
    for v in ("scalar", "vec4"):
        out = tmp_path / f"{v}.json"
        proc = run_tool("ptxas_profile.py", "--arch", "sm_90a", "--ptxas", ptxas_path,
                        "--require-zero-spills", "-o", out,
                        f"tests/tools/data/saxpy_{v}.ptx", cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        recorded = DATA / "h200_saxpy" / f"saxpy_{v}.profile.json"
        if json.loads(out.read_text())["ptxas_version"] != \
                json.loads(recorded.read_text())["ptxas_version"]:
            pytest.skip("local ptxas differs from the H200's; profiles legitimately differ")
        assert out.read_bytes() == recorded.read_bytes()
