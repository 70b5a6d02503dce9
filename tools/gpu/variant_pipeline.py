#!/usr/bin/env python3
"""variant_pipeline: profile -> collect -> select for PTX variants of one kernel.

usage: variant_pipeline.py --workload=W.json --out-dir=DIR [--arch=sm_90a] [--model=sm_90]
                           [--rounds=31] [--warmup=5] [--seed=0] [--dry-run]
                           [--require-selection] v1.ptx v2.ptx...

1. ptxas_profile.py --require-zero-spills on each variant -> DIR/<stem>.profile.json
2. ptxas_select.py --policy=pareto (static view, for the record) -> DIR/static_selection.json
3. collect_measurements.py on the GPU -> DIR/timings.json (--dry-run: validate only)
4. ptxas_select.py --policy=measured -> DIR/selection.json, and print the decision.
Each step is the stand-alone tool run as a subprocess, so the pipeline adds no logic of its
own; the first failing step stops it with that step's exit status.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.gpu.tool_io import ToolError, run_cli  # noqa: E402

HERE = Path(__file__).resolve().parent


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variant_pipeline.py", description=__doc__.split("\n")[0])
    p.add_argument("variants", nargs="+", metavar="variant.ptx")
    p.add_argument("--workload", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--model", default="sm_90")
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dry-run", action="store_true", help="no device: stop after validation")
    p.add_argument("--require-selection", action="store_true")
    return p


def step(title: str, tool: str, *args: str) -> None:
    print(f"== {title}", flush=True)
    proc = subprocess.run([sys.executable, str(HERE / tool), *args], check=False)
    if proc.returncode != 0:
        raise ToolError(f"step '{title}' failed ({tool} exit {proc.returncode})", proc.returncode)


def decision_lines(selection_path: Path) -> list[str]:
    doc = json.loads(selection_path.read_text())
    lines = [f"policy={doc['policy']} performance_claim={str(doc['performance_claim']).lower()}"]
    for name, ent in sorted(doc["entries"].items()):
        lines.append(f"entry {name}: selection={ent['selection']} ({ent['reason']})")
        for other, cmp in sorted(ent.get("measured", {}).get("comparisons", {}).items()):
            lines.append(f"  vs {other}: pairs={cmp['positive_pairs']} wins={cmp['wins']} "
                         f"losses={cmp['losses']} p={cmp['p_value']:.3g} "
                         f"median_speedup={cmp['median_speedup']}")
    return lines


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if len(args.variants) < 2:
        raise ToolError("give two or more PTX variants")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    profiles = []
    for ptx in args.variants:
        prof = out / f"{Path(ptx).stem}.profile.json"
        step(f"profile {ptx}", "ptxas_profile.py", "--arch", args.arch,
             "--require-zero-spills", "-o", str(prof), ptx)
        profiles.append(str(prof))
    step("static selection (pareto)", "ptxas_select.py", "--model", args.model,
         "--policy", "pareto", "-o", str(out / "static_selection.json"), *profiles)
    collect = ["--workload", args.workload, "--rounds", str(args.rounds),
               "--warmup", str(args.warmup), "--seed", str(args.seed)]
    for ptx, prof in zip(args.variants, profiles):
        collect += ["--variant", ptx, prof]
    if args.dry_run:
        step("collect (dry run)", "collect_measurements.py", *collect, "--dry-run")
        return 0
    timings = out / "timings.json"
    step("collect", "collect_measurements.py", *collect, "-o", str(timings))
    select = ["--model", args.model, "--policy", "measured", "--measurements", str(timings),
              "-o", str(out / "selection.json"), *profiles]
    step("measured selection", "ptxas_select.py", *select,
         *(["--require-selection"] if args.require_selection else []))
    print("\n".join(decision_lines(out / "selection.json")))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
