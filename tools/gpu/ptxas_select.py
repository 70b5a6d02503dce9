#!/usr/bin/env python3
"""ptxas_select: choose between kernel variants from their ptxas profiles.

usage: ptxas_select.py [--model=sm_90|sm_121|model.json] [--threads-per-block=N]
                       [--policy=pareto|occupancy|traffic|measured] [--measurements=F]
                       [--allow-spills] [--require-selection] [--min-pairs=21]
                       [--alpha=0.01] [--min-speedup=1.01] [-o selection.json]
                       a.profile.json b.profile.json...

Per entry function it reports modeled residency (register-, shared-memory-, warp- and
block-limited), rejects spills unless --allow-spills, lists the Pareto frontier over
occupancy, headroom and static global-memory instruction count, and applies the policy.
A null selection means the evidence does not decide; --require-selection turns any null
selection into exit status 3 (the JSON is still written). The output always records
`performance_claim: false`: modeled occupancy, static counts and local timings are inputs
to tuning, not a performance claim.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.gpu import measured_selection, resource_model  # noqa: E402
from tools.gpu import variant_selection as vs  # noqa: E402
from tools.gpu.tool_io import ToolError, dump_stable, run_cli, write_text_atomic  # noqa: E402

SCHEMA = "mettle.variant_selection/1"
POLICIES = vs.STATIC_POLICIES + ("measured",)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ptxas_select.py", description=__doc__.split("\n")[0])
    p.add_argument("profiles", nargs="+", metavar="profile.json")
    p.add_argument("--model", default="sm_90", help="built-in model name or model JSON path")
    p.add_argument("--threads-per-block", type=int, help="default: the model's assumption")
    p.add_argument("--policy", choices=POLICIES, default="pareto")
    p.add_argument("--measurements", help="timings JSON (variant_measurements.schema.json)")
    p.add_argument("--allow-spills", action="store_true")
    p.add_argument("--require-selection", action="store_true",
                   help="exit 3 when any entry's selection is null")
    p.add_argument("--min-pairs", type=int, default=21)
    p.add_argument("--alpha", type=float, default=0.01)
    p.add_argument("--min-speedup", type=float, default=1.01)
    p.add_argument("-o", "--output", help="selection JSON (default: stdout)")
    return p


def _check_args(args: argparse.Namespace) -> measured_selection.Thresholds:
    if len(args.profiles) < 2:
        raise ToolError("give two or more profiles to compare")
    if (args.policy == "measured") != (args.measurements is not None):
        raise ToolError("--policy=measured and --measurements=FILE go together")
    if args.min_pairs < 1 or not 0 < args.alpha < 1 or args.min_speedup <= 0:
        raise ToolError("need --min-pairs >= 1, 0 < --alpha < 1 and --min-speedup > 0")
    return measured_selection.Thresholds(args.min_pairs, args.alpha, args.min_speedup)


def select_entry(args, model, cands, entry: str, measured: dict | None, th) -> dict:
    threads = args.threads_per_block or model["threads_per_block"]
    if measured is not None and entry in measured:
        threads = measured[entry]["threads_per_block"]
    scored = {c.name: vs.score(model, c.profile["functions"][entry], threads, args.allow_spills)
              for c in cands if entry in c.profile["functions"]}
    frontier = vs.pareto_frontier(scored)
    out = {"threads_per_block": threads, "candidates": scored, "frontier": frontier}
    if args.policy != "measured":
        out["selection"], out["reason"] = vs.static_decision(args.policy, scored, frontier)
        return out
    if entry not in measured:
        out["selection"], out["reason"] = None, "entry has no measurements"
        return out
    m = measured[entry]
    eligible = sorted(n for n, s in scored.items() if s["eligible"])
    sel, reason, evidence = measured_selection.measured_decision(eligible, m["samples"], th)
    out.update(selection=sel, reason=reason, measured={
        **evidence, "workload_sha256": m["workload_sha256"], "launch": m["launch"]})
    return out


def build_selection(args: argparse.Namespace) -> dict:
    th = _check_args(args)
    model = resource_model.load_model(args.model)
    cands = vs.load_candidates(args.profiles)
    measured, run = None, None
    if args.policy == "measured":
        by_sha = {c.sha256: c.name for c in cands}
        if len(by_sha) != len(cands):
            raise ToolError("two profiles are byte-identical, so timings cannot be bound to "
                            "one of them; drop the duplicate")
        run, measured = measured_selection.load_measurements(
            args.measurements, by_sha)
        unknown = sorted(set(measured) - set(vs.entry_names(cands)))
        if unknown:
            raise ToolError(f"{args.measurements} measures entries no profile defines: {unknown}")
    entries = {e: select_entry(args, model, cands, e, measured, th) for e in vs.entry_names(cands)}
    doc = {
        "schema": SCHEMA, "policy": args.policy, "performance_claim": False,
        "model": model, "allow_spills": bool(args.allow_spills),
        "candidates": [{"name": c.name, "profile": c.path, "profile_sha256": c.sha256,
                        "arch": c.profile.get("arch")} for c in cands],
        "entries": entries,
        "selection_complete": all(e["selection"] is not None for e in entries.values()),
    }
    if run is not None:
        doc["measurements"] = {"path": args.measurements, "run": run,
                               "thresholds": th.to_json()}
    return doc


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    doc = build_selection(args)
    text = dump_stable(doc)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    for name, ent in sorted(doc["entries"].items()):
        print(f"{name}: {ent['selection'] or 'no selection'} ({ent['reason']})", file=sys.stderr)
    if args.require_selection and not doc["selection_complete"]:
        nulls = sorted(n for n, e in doc["entries"].items() if e["selection"] is None)
        raise ToolError(f"--require-selection: no selection for {', '.join(nulls)}", 3)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
