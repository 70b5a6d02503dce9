#!/usr/bin/env python3
"""ptxas_profile: offline resource profile of PTX modules as stable JSON.

usage: ptxas_profile.py --arch sm_90a [--require-zero-spills] [--max-registers=N]
                        [--ptxas=PATH] -o resources.json kernel.ptx...

For every input it records the SHA-256 of the exact bytes, and for every function the
registers, spill stores/loads, stack frame, barriers, shared and constant memory reported by
`ptxas -v`, plus lexical PTX instruction-class counts. It never creates a CUDA context,
touches a device, loads a module or launches code: the output is offline assembler
evidence, not runtime evidence (`performance_claim` is always false). Same inputs and
flags give a byte-identical file. A violated gate (spills, registers) exits 1 and writes
no output file. Functions that ptxas drops (uncalled `.func`) carry null resources.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.gpu import ptx_lexical, ptxas_runner  # noqa: E402
from tools.gpu.tool_io import (ToolError, dump_stable, read_bytes, run_cli,  # noqa: E402
                               sha256_bytes, write_text_atomic)

SCHEMA = "mettle.ptxas_profile/1"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ptxas_profile.py", description=__doc__.split("\n")[0])
    p.add_argument("--arch", required=True, help="ptxas --gpu-name, e.g. sm_90a")
    p.add_argument("--require-zero-spills", action="store_true",
                   help="fail if any function spills (stores or loads)")
    p.add_argument("--max-registers", type=int, metavar="N",
                   help="fail if any function uses more than N registers")
    p.add_argument("--ptxas", help="ptxas executable (default: see ptxas_runner lookup)")
    p.add_argument("-o", "--output", required=True, help="resources.json to write")
    p.add_argument("inputs", nargs="+", metavar="kernel.ptx")
    return p


def _function_record(fn: ptx_lexical.PtxFunction, source: str,
                     res: ptxas_runner.FunctionResources | None) -> dict:
    counts = ptx_lexical.class_counts(fn)
    rec = {
        "kind": fn.kind,
        "input": source,
        "assembled": res is not None,
        "instruction_classes": counts,
        "instructions_total": sum(counts.values()),
        "global_memory_instructions": ptx_lexical.global_memory_instructions(counts),
    }
    fields = ("registers", "stack_frame_bytes", "spill_stores_bytes", "spill_loads_bytes",
              "barriers", "shared_bytes")
    for name in fields:
        rec[name] = getattr(res, name) if res is not None else None
    rec["constant_bytes"] = dict(sorted(res.constant_bytes.items())) if res else {}
    return rec


def profile_input(ptxas: str, arch: str, path: str, functions: dict) -> dict:
    """Assemble one PTX file and merge its functions into `functions` (name -> record)."""
    data = read_bytes(path)
    try:
        parsed = ptx_lexical.split_functions(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ToolError(f"{path}: cannot read PTX: {exc}") from None
    gmem, resources = ptxas_runner.assemble(ptxas, arch, path)
    by_name = {r.name: r for r in resources}
    for fn in parsed:
        if fn.name in functions:
            raise ToolError(f"function {fn.name!r} is defined in {path} and in "
                            f"{functions[fn.name]['input']}; profile them separately")
        functions[fn.name] = _function_record(fn, path, by_name.get(fn.name))
    return {"path": path, "sha256": sha256_bytes(data), "global_bytes": int(gmem)}


def gate_violations(functions: dict, zero_spills: bool, max_registers: int | None) -> list[str]:
    bad = []
    for name, rec in sorted(functions.items()):
        spills = (rec["spill_stores_bytes"] or 0) + (rec["spill_loads_bytes"] or 0)
        if zero_spills and spills:
            bad.append(f"{name}: {rec['spill_stores_bytes']} bytes spill stores, "
                       f"{rec['spill_loads_bytes']} bytes spill loads (--require-zero-spills)")
        regs = rec["registers"]
        if max_registers is not None and regs is not None and regs > max_registers:
            bad.append(f"{name}: {regs} registers > --max-registers={max_registers}")
    return bad


def build_profile(args: argparse.Namespace) -> dict:
    if args.max_registers is not None and args.max_registers < 1:
        raise ToolError("--max-registers must be a positive integer")
    ptxas = ptxas_runner.find_ptxas(args.ptxas)
    functions: dict = {}
    inputs = [profile_input(ptxas, args.arch, p, functions) for p in args.inputs]
    bad = gate_violations(functions, args.require_zero_spills, args.max_registers)
    if bad:
        raise ToolError("resource gate violated:\n  " + "\n  ".join(bad))
    return {
        "schema": SCHEMA,
        "arch": args.arch,
        "ptxas_version": ptxas_runner.ptxas_version(ptxas),
        "gates": {"require_zero_spills": bool(args.require_zero_spills),
                  "max_registers": args.max_registers},
        "inputs": inputs,
        "functions": functions,
        "evidence": "offline ptxas assembly; no device was used",
        "performance_claim": False,
    }


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    write_text_atomic(args.output, dump_stable(build_profile(args)))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
