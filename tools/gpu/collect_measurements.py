#!/usr/bin/env python3
"""collect_measurements: time kernel variants on a GPU into a schema-valid timings file.

usage: collect_measurements.py --workload=W.json --variant v1.ptx v1.profile.json
                               --variant v2.ptx v2.profile.json [--rounds=31] [--warmup=5]
                               [--seed=0] [--device=0] [--no-output-check] [--dry-run]
                               -o timings.json

Each variant's PTX is JIT-loaded through the CUDA driver (ctypes over libcuda.so.1); every
variant first runs once on freshly initialised buffers and their output buffers must agree
byte for byte (disable with --no-output-check), then warms up separately, then each round
runs every variant once in a seeded random order (recorded as round_order), timed with CUDA
events. samples_ns[i] of every candidate is paired round i. Candidates are bound to the
SHA-256 of their profile file and the PTX must be one of that profile's inputs. The output
is validated against variant_measurements.schema.json when jsonschema is installed; without
it the validation is skipped with a message. --dry-run checks the workload and variants
without touching a device. Importing this module needs no GPU.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import platform
import random
import statistics
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.gpu import gpu_workload, variant_selection  # noqa: E402
from tools.gpu.tool_io import (ToolError, dump_stable, load_json, read_bytes,  # noqa: E402
                               run_cli, sha256_bytes, sha256_file, write_text_atomic)

SCHEMA = "mettle.variant_measurements/1"
SCHEMA_PATH = Path(__file__).resolve().parent / "variant_measurements.schema.json"
MIN_PAIRS_DEFAULT = 21


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="collect_measurements.py",
                                description=__doc__.split("\n")[0])
    p.add_argument("--workload", required=True)
    p.add_argument("--variant", nargs=2, action="append", required=True,
                   metavar=("PTX", "PROFILE"), help="a PTX variant and its ptxas profile")
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--warmup", type=int, default=5, help="launches per variant before timing")
    p.add_argument("--seed", type=int, default=0, help="seed of the per-round order shuffle")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--no-output-check", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="validate inputs; no device")
    p.add_argument("-o", "--output")
    return p


def load_variants(pairs: list[list[str]], kernel: str) -> list[dict]:
    """Name, PTX bytes and profile binding of each variant; checks PTX <-> profile."""
    out, names = [], set()
    for ptx_path, profile_path in pairs:
        ptx = read_bytes(ptx_path)
        prof = load_json(profile_path, "profile")
        if not isinstance(prof, dict) or prof.get("schema") != variant_selection.PROFILE_SCHEMA:
            raise ToolError(f"{profile_path} is not a ptxas_profile.py output")
        if sha256_bytes(ptx) not in {i.get("sha256") for i in prof.get("inputs", [])}:
            raise ToolError(f"{profile_path} does not profile {ptx_path} (no input with its "
                            f"sha256); re-run ptxas_profile.py on it")
        fn = prof.get("functions", {}).get(kernel)
        if not fn or fn.get("kind") != "entry":
            raise ToolError(f"{profile_path}: no entry function {kernel!r}")
        name = variant_selection.candidate_name(profile_path)
        if name in names:
            raise ToolError(f"two variants are both named {name!r}")
        names.add(name)
        out.append({"name": name, "ptx_path": ptx_path, "ptx": ptx,
                    "ptx_sha256": sha256_bytes(ptx), "profile_sha256": sha256_file(profile_path)})
    if len(out) < 2:
        raise ToolError("give two or more --variant PTX PROFILE pairs")
    return out


def _params(drv, wl, ptrs: dict) -> tuple:
    """kernelParams array (void**) plus the storage it points into (kept alive)."""
    storage = []
    for arg in wl.args:
        if "buffer" in arg:
            storage.append(ctypes.c_uint64(ptrs[arg["buffer"]].value))
        else:
            storage.append(ctypes.create_string_buffer(
                gpu_workload.pack_scalar(arg["type"], arg["value"])))
    arr = (ctypes.c_void_p * len(storage))(*(ctypes.addressof(s) for s in storage))
    return arr, storage


def _output_digest(drv, wl, fn, params, ptrs, initial: dict) -> str:
    outs = [b for b in wl.buffers.values() if b.output]
    for b in outs:
        drv.upload(ptrs[b.name], initial[b.name])
    drv.launch(fn, wl.grid, wl.block, wl.shared_bytes, params)
    drv.synchronize()
    return sha256_bytes(b"".join(drv.download(ptrs[b.name], b.nbytes) for b in outs))


def _time_once(drv, wl, fn, params, start, end) -> int:
    drv.record(start)
    for _ in range(wl.launches_per_sample):
        drv.launch(fn, wl.grid, wl.block, wl.shared_bytes, params)
    drv.record(end)
    return drv.elapsed_ns(start, end) // wl.launches_per_sample


def run_rounds(drv, wl, fns, params, args) -> tuple[list[list[int]], list[list[int]]]:
    """Separate warm-up per variant, then seeded randomly ordered paired rounds."""
    for fn in fns:
        for _ in range(args.warmup):
            drv.launch(fn, wl.grid, wl.block, wl.shared_bytes, params)
        drv.synchronize()
    rng = random.Random(args.seed)
    start, end = drv.event(), drv.event()
    samples: list[list[int]] = [[] for _ in fns]
    orders = []
    for _ in range(args.rounds):
        order = list(range(len(fns)))
        rng.shuffle(order)
        orders.append(order)
        for i in order:
            samples[i].append(_time_once(drv, wl, fns[i], params, start, end))
    return samples, orders


def measure(args, wl, variants) -> tuple[dict, list, list]:
    from tools.gpu.cuda_driver import Driver  # lazy: needs libcuda.so.1
    drv = Driver(args.device)
    ptrs: dict = {}
    try:
        facts = drv.device_facts()
        initial = {n: gpu_workload.host_bytes(b) for n, b in wl.buffers.items()}
        for name, buf in wl.buffers.items():
            ptrs[name] = drv.alloc(buf.nbytes)
            drv.upload(ptrs[name], initial[name])
        params, _keep = _params(drv, wl, ptrs)
        fns = [drv.get_function(drv.load_module(v["ptx"], v["ptx_path"]), wl.kernel)
               for v in variants]
        if not args.no_output_check:
            digests = [_output_digest(drv, wl, fn, params, ptrs, initial) for fn in fns]
            for v, d in zip(variants, digests):
                v["outputs_sha256"] = d
            if len(set(digests)) > 1:
                raise ToolError("variants disagree on the output buffers: " + ", ".join(
                    f"{v['name']}={d[:12]}" for v, d in zip(variants, digests)))
        samples, orders = run_rounds(drv, wl, fns, params, args)
        return facts, samples, orders
    finally:
        _release(drv, ptrs)


def _release(drv, ptrs: dict) -> None:
    """Best-effort cleanup: after a kernel fault the context is unusable and every call
    fails, and that must not hide the error that caused it."""
    for ptr in ptrs.values():
        try:
            drv.free(ptr)
        except ToolError:
            break
    try:
        drv.close()
    except ToolError:
        pass


def build_document(args, wl, variants, facts, samples, orders) -> dict:
    run = {**facts, "host_architecture": platform.machine(), "rounds": args.rounds,
           "warmup_launches": args.warmup, "launches_per_sample": wl.launches_per_sample,
           "seed": args.seed, "timer": "cuEventElapsedTime",
           "collector": "tools/gpu/collect_measurements.py"}
    cands = []
    for v, s in zip(variants, samples):
        cand = {"name": v["name"], "profile_sha256": v["profile_sha256"],
                "ptx_sha256": v["ptx_sha256"], "samples_ns": s}
        if "outputs_sha256" in v:
            cand["outputs_sha256"] = v["outputs_sha256"]
        cands.append(cand)
    entry = {"entry": wl.kernel, "workload_sha256": wl.sha256, "launch": wl.launch_json(),
             "round_order": orders, "candidates": cands}
    return {"schema": SCHEMA, "run": run, "entries": [entry]}


def validate_if_possible(doc: dict) -> str:
    """Schema-check the output; jsonschema is optional here (the GPU host may lack it)."""
    try:
        import jsonschema
    except ImportError:
        return "jsonschema is not installed: skipped schema validation of the output"
    schema = json.loads(SCHEMA_PATH.read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if errors:
        raise ToolError("collected document fails the schema: " + errors[0].message)
    return "output validated against variant_measurements.schema.json"


def summary(doc: dict, wl) -> str:
    nbytes = wl.doc.get("bytes_per_launch", 0)
    lines = [f"{'variant':<24} {'median ns':>12} {'GB/s':>9}"]
    for c in doc["entries"][0]["candidates"]:
        med = statistics.median(c["samples_ns"])
        gbs = f"{nbytes / med:9.1f}" if nbytes and med else f"{'-':>9}"
        lines.append(f"{c['name']:<24} {med:12.0f} {gbs}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.rounds < 1 or args.warmup < 0:
        raise ToolError("need --rounds >= 1 and --warmup >= 0")
    wl = gpu_workload.load_workload(args.workload)
    variants = load_variants(args.variant, wl.kernel)
    if args.rounds < MIN_PAIRS_DEFAULT:
        print(f"note: {args.rounds} rounds < {MIN_PAIRS_DEFAULT}: the default measured gate "
              f"will leave the selection null", file=sys.stderr)
    if args.dry_run:
        total = sum(b.nbytes for b in wl.buffers.values())
        print(f"dry run ok: workload {wl.sha256} kernel {wl.kernel}, {len(variants)} variants "
              f"({', '.join(v['name'] for v in variants)}), {total} bytes of buffers; "
              f"no device was used")
        return 0
    if not args.output:
        raise ToolError("-o timings.json is required unless --dry-run")
    doc = build_document(args, wl, variants, *measure(args, wl, variants))
    print(validate_if_possible(doc), file=sys.stderr)
    write_text_atomic(args.output, dump_stable(doc))
    print(summary(doc, wl))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
