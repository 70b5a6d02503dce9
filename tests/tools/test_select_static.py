"""ptxas_select.py static policies: Pareto frontier, ties, spills, --require-selection."""
from __future__ import annotations

import json

import pytest

from tests.tools.variant_tool_helpers import function, run_tool, write_profile


@pytest.fixture
def tradeoff(tmp_path):
    """fast_occ: 32 regs (occupancy 1.0), 8 global ops; lean: 64 regs (0.5), 2 global ops."""
    return [write_profile(tmp_path / "fast_occ.json", {"k": function(registers=32, gmi=8)}),
            write_profile(tmp_path / "lean.json", {"k": function(registers=64, gmi=2)})]


def select(tmp_path, profiles, *flags):
    out = tmp_path / "sel.json"
    out.unlink(missing_ok=True)
    proc = run_tool("ptxas_select.py", *flags, "-o", out, *profiles)
    doc = json.loads(out.read_text()) if out.exists() else None
    return proc, doc


def test_pareto_leaves_tradeoff_unresolved(tmp_path, tradeoff):
    proc, doc = select(tmp_path, tradeoff)
    assert proc.returncode == 0
    ent = doc["entries"]["k"]
    assert ent["frontier"] == ["fast_occ", "lean"] and ent["selection"] is None
    assert doc["performance_claim"] is False and doc["selection_complete"] is False
    assert ent["candidates"]["lean"]["residency"]["limiting"] == ["registers"]


def test_require_selection_fails_closed_but_keeps_evidence(tmp_path, tradeoff):
    proc, doc = select(tmp_path, tradeoff, "--require-selection")
    assert proc.returncode == 3 and "no selection for k" in proc.stderr
    assert doc["entries"]["k"]["selection"] is None and doc["performance_claim"] is False


@pytest.mark.parametrize("policy,expected", [("occupancy", "fast_occ"), ("traffic", "lean")])
def test_explicit_policies_resolve_the_tradeoff(tmp_path, tradeoff, policy, expected):
    proc, doc = select(tmp_path, tradeoff, f"--policy={policy}", "--require-selection")
    assert proc.returncode == 0, proc.stderr
    assert doc["entries"]["k"]["selection"] == expected and doc["policy"] == policy


def test_identical_candidates_tie_under_every_static_policy(tmp_path):
    profs = [write_profile(tmp_path / f"{n}.json", {"k": function()}) for n in ("a", "b")]
    for policy in ("pareto", "occupancy", "traffic"):
        proc, doc = select(tmp_path, profs, f"--policy={policy}")
        assert doc["entries"]["k"]["selection"] is None, policy
        assert doc["entries"]["k"]["frontier"] == ["a", "b"]
    proc, _ = select(tmp_path, profs, "--policy=occupancy", "--require-selection")
    assert proc.returncode == 3


def test_dominated_candidate_leaves_the_frontier(tmp_path):
    profs = [write_profile(tmp_path / "good.json", {"k": function(registers=32, gmi=2)}),
             write_profile(tmp_path / "worse.json", {"k": function(registers=64, gmi=4)})]
    _, doc = select(tmp_path, profs)
    assert doc["entries"]["k"]["frontier"] == ["good"]
    assert doc["entries"]["k"]["selection"] == "good"


def test_spills_are_rejected_unless_allowed(tmp_path):
    profs = [write_profile(tmp_path / "spiller.json", {"k": function(registers=32, spills=8,
                                                                      gmi=1)}),
             write_profile(tmp_path / "clean.json", {"k": function(registers=64, gmi=4)})]
    _, doc = select(tmp_path, profs)
    cand = doc["entries"]["k"]["candidates"]["spiller"]
    assert cand["eligible"] is False and "spills 16 bytes" in cand["rejected"]
    assert doc["entries"]["k"]["selection"] == "clean"
    _, doc = select(tmp_path, profs, "--allow-spills")
    assert doc["entries"]["k"]["selection"] == "spiller" and doc["allow_spills"] is True


def test_entries_are_selected_independently_and_model_is_recorded(tmp_path):
    profs = [write_profile(tmp_path / "a.json", {"k": function(gmi=1), "j": function(gmi=9)}),
             write_profile(tmp_path / "b.json", {"k": function(gmi=5), "j": function(gmi=3),
                                                 "helper": function(kind="func")})]
    _, doc = select(tmp_path, profs, "--model=sm_121", "--threads-per-block=128")
    assert {e: v["selection"] for e, v in doc["entries"].items()} == {"j": "b", "k": "a"}
    assert doc["model"]["name"] == "sm_121" and doc["model"]["assumptions"]
    assert doc["entries"]["k"]["threads_per_block"] == 128


def test_usage_errors_are_messages(tmp_path, tradeoff):
    proc, _ = select(tmp_path, tradeoff[:1])
    assert proc.returncode == 1 and "two or more profiles" in proc.stderr
    proc, _ = select(tmp_path, tradeoff, "--policy=measured")
    assert proc.returncode == 1 and "go together" in proc.stderr
    (tmp_path / "junk.json").write_text("{not json")
    proc, _ = select(tmp_path, [tradeoff[0], tmp_path / "junk.json"])
    assert proc.returncode == 1 and "not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
