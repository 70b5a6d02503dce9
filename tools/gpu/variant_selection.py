"""Static variant selection: per-entry eligibility, Pareto frontier and the static policies.

Every candidate is one ptxas profile (one variant of a module). For every entry function the
candidates that define it are scored under an explicit resource model: modeled occupancy and
headroom (higher is better) and static global-memory instruction count (lower is better).
Spilling or unlaunchable candidates are ineligible. Policies never guess: `pareto` selects
only a sole frontier member, `occupancy`/`traffic` select the unique best under their
lexicographic key, and any remaining tie leaves the selection null.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.gpu import resource_model
from tools.gpu.tool_io import ToolError, load_json, sha256_file

PROFILE_SCHEMA = "mettle.ptxas_profile/1"
STATIC_POLICIES = ("pareto", "occupancy", "traffic")


@dataclass(frozen=True)
class Candidate:
    name: str
    path: str
    sha256: str
    profile: dict


def candidate_name(path: str) -> str:
    name = Path(path).name
    for suffix in (".json", ".profile", ".resources"):
        name = name.removesuffix(suffix)
    return name


def load_candidates(paths: list[str]) -> list[Candidate]:
    out: dict[str, Candidate] = {}
    for path in paths:
        prof = load_json(path, "profile")
        if not isinstance(prof, dict) or prof.get("schema") != PROFILE_SCHEMA \
                or not isinstance(prof.get("functions"), dict):
            raise ToolError(f"{path} is not a ptxas_profile.py output ({PROFILE_SCHEMA})")
        name = candidate_name(path)
        if name in out:
            raise ToolError(f"two profiles are both named {name!r} ({out[name].path}, {path}); "
                            f"rename one, the candidate name is the file name")
        out[name] = Candidate(name, path, sha256_file(path), prof)
    return [out[k] for k in sorted(out)]


def entry_names(cands: list[Candidate]) -> list[str]:
    return sorted({fn for c in cands for fn, rec in c.profile["functions"].items()
                   if rec.get("kind") == "entry"})


def score(model: dict, rec: dict, threads: int, allow_spills: bool) -> dict:
    """Metrics and eligibility of one candidate's function record."""
    out = {"registers": rec.get("registers"), "shared_bytes": rec.get("shared_bytes"),
           "spill_stores_bytes": rec.get("spill_stores_bytes"),
           "spill_loads_bytes": rec.get("spill_loads_bytes"),
           "global_memory_instructions": rec.get("global_memory_instructions", 0),
           "eligible": False, "rejected": None}
    if rec.get("registers") is None:
        out["rejected"] = "no ptxas resources (function not assembled)"
        return out
    res = resource_model.residency(model, threads, rec["registers"], rec.get("shared_bytes") or 0)
    out["residency"] = res.to_json()
    out["occupancy"], out["headroom"] = res.occupancy, res.headroom
    spills = (rec.get("spill_stores_bytes") or 0) + (rec.get("spill_loads_bytes") or 0)
    if spills and not allow_spills:
        out["rejected"] = f"spills {spills} bytes (pass --allow-spills to consider it)"
    elif res.blocks_per_sm == 0:
        out["rejected"] = f"cannot be resident (limited by {', '.join(res.limiting)})"
    else:
        out["eligible"] = True
    return out


def _dominates(a: dict, b: dict) -> bool:
    ge = (a["occupancy"] >= b["occupancy"] and a["headroom"] >= b["headroom"]
          and a["global_memory_instructions"] <= b["global_memory_instructions"])
    gt = (a["occupancy"] > b["occupancy"] or a["headroom"] > b["headroom"]
          or a["global_memory_instructions"] < b["global_memory_instructions"])
    return ge and gt


def pareto_frontier(scored: dict[str, dict]) -> list[str]:
    """Names of eligible candidates that no other eligible candidate dominates."""
    elig = {n: s for n, s in scored.items() if s["eligible"]}
    return sorted(n for n, s in elig.items()
                  if not any(_dominates(o, s) for m, o in elig.items() if m != n))


def _policy_key(policy: str, s: dict) -> tuple:
    occ, head, gmi = s["occupancy"], s["headroom"], s["global_memory_instructions"]
    return (-occ, -head, gmi) if policy == "occupancy" else (gmi, -occ, -head)


def static_decision(policy: str, scored: dict[str, dict], frontier: list[str]) -> tuple:
    """(selection or None, reason) under a static policy."""
    if not frontier:
        return None, "no eligible candidate"
    if len(frontier) == 1:
        return frontier[0], f"sole Pareto-optimal candidate under policy {policy}"
    if policy == "pareto":
        return None, ("Pareto tradeoff left unresolved between " + ", ".join(frontier) +
                      "; choose --policy=occupancy, traffic or measured")
    keys = {n: _policy_key(policy, scored[n]) for n in frontier}
    best = min(keys.values())
    winners = sorted(n for n, k in keys.items() if k == best)
    if len(winners) > 1:
        return None, f"tie under policy {policy} between " + ", ".join(winners)
    return winners[0], f"unique best under policy {policy}"
