"""Measured variant selection: validate and bind timings, then apply the statistical gate.

Binding: every measured candidate names the SHA-256 of the exact profile file it was built
from; a hash that matches none of the given profiles is an error (stale or foreign timings).
Gate, per entry: the eligible candidate with the lowest median is only provisional; it is
selected only if, against every other eligible candidate, it has at least `min_pairs`
positive pairs, wins a two-sided exact paired sign test at alpha / (candidates - 1)
(Bonferroni), wins more rounds than it loses, and has a median paired speedup of at least
`min_speedup`. Otherwise the selection is null. The selector never collects samples.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from tools.gpu import paired_statistics as stats
from tools.gpu.tool_io import ToolError, load_json

SCHEMA_PATH = Path(__file__).resolve().parent / "variant_measurements.schema.json"


@dataclass(frozen=True)
class Thresholds:
    min_pairs: int = 21
    alpha: float = 0.01
    min_speedup: float = 1.01

    def to_json(self) -> dict:
        return {"min_positive_pairs": self.min_pairs, "alpha": self.alpha,
                "correction": "bonferroni", "min_median_speedup": self.min_speedup,
                "test": "exact two-sided paired sign test (ties dropped)"}


def validate_measurements(doc: object, source: str) -> None:
    """Validate against variant_measurements.schema.json; jsonschema is required here."""
    try:
        import jsonschema  # lazy: only the measured policy needs it
    except ImportError:
        raise ToolError("--policy=measured needs the Python module 'jsonschema' to validate "
                        f"{source}; install it (pip install jsonschema)") from None
    schema = json.loads(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                 for e in errors[:8]]
        raise ToolError(f"{source} does not follow {SCHEMA_PATH.name}:\n  " + "\n  ".join(lines))


def load_measurements(path: str, by_sha: dict[str, str]) -> tuple[dict, dict[str, dict]]:
    """(run record, entry name -> bound entry) with samples keyed by candidate name."""
    doc = load_json(path, "measurements")
    validate_measurements(doc, path)
    rounds = doc["run"]["rounds"]
    entries: dict[str, dict] = {}
    for ent in doc["entries"]:
        name = ent["entry"]
        if name in entries:
            raise ToolError(f"{path}: entry {name!r} appears twice")
        samples: dict[str, list[int]] = {}
        for cand in ent["candidates"]:
            bound = by_sha.get(cand["profile_sha256"])
            if bound is None:
                raise ToolError(f"{path}: entry {name!r} candidate {cand['name']!r} is bound to "
                                f"profile sha256 {cand['profile_sha256']}, which matches none "
                                f"of the given profiles")
            if bound in samples:
                raise ToolError(f"{path}: entry {name!r} measures profile {bound!r} twice")
            if len(cand["samples_ns"]) != rounds:
                raise ToolError(f"{path}: entry {name!r} candidate {cand['name']!r} has "
                                f"{len(cand['samples_ns'])} samples for {rounds} paired rounds")
            samples[bound] = cand["samples_ns"]
        entries[name] = {"workload_sha256": ent["workload_sha256"], "launch": ent["launch"],
                         "threads_per_block": math.prod(ent["launch"]["block"]),
                         "samples": samples}
    return doc["run"], entries


def _comparison(best: list[int], other: list[int], th: Thresholds, alpha_c: Fraction) -> dict:
    cmp = stats.compare_paired(best, other)
    failed = []
    if cmp.positive_pairs < th.min_pairs:
        failed.append(f"{cmp.positive_pairs} positive pairs < {th.min_pairs}")
    if cmp.p_value > alpha_c or cmp.wins <= cmp.losses:
        failed.append(f"sign test not significant in favour of the provisional best "
                      f"(p={float(cmp.p_value):.3g}, alpha per comparison {float(alpha_c):.3g})")
    if cmp.median_speedup is None or cmp.median_speedup < Fraction(th.min_speedup):
        failed.append(f"median paired speedup below {th.min_speedup}")
    return {**cmp.to_json(), "passed": not failed, "failed": failed}


def measured_decision(eligible: list[str], samples: dict[str, list[int]],
                      th: Thresholds) -> tuple[str | None, str, dict]:
    """(selection or None, reason, evidence) for one entry."""
    missing = [n for n in eligible if n not in samples]
    if missing:
        return None, "eligible candidates without measurements: " + ", ".join(missing), {}
    if len(eligible) < 2:
        sel = eligible[0] if eligible else None
        return sel, ("only eligible candidate" if sel else "no eligible candidate"), {}
    medians = {}
    for n in eligible:
        positive = [s for s in samples[n] if s > 0]
        if not positive:
            return None, f"candidate {n} has no positive samples", {}
        medians[n] = stats.median(positive)
    best = min(eligible, key=lambda n: (medians[n], n))
    alpha_c = stats.bonferroni_alpha(th.alpha, len(eligible) - 1)
    comps = {o: _comparison(samples[best], samples[o], th, alpha_c)
             for o in eligible if o != best}
    evidence = {"medians_ns": {n: float(m) for n, m in sorted(medians.items())},
                "provisional": best, "alpha_per_comparison": float(alpha_c),
                "comparisons": comps}
    if all(c["passed"] for c in comps.values()):
        return best, f"{best} passed the measured gate against every eligible candidate", evidence
    losers = sorted(o for o, c in comps.items() if not c["passed"])
    return None, (f"provisional best {best} not separated from " + ", ".join(losers)), evidence
