#!/usr/bin/env python3
"""collect_measurements: time kernel variants on a GPU into a schema-valid timings file.

usage: collect_measurements.py --workload=W.json --variant v1.ptx v1.profile.json
                               --variant v2.ptx v2.profile.json [--rounds=31] [--warmup=5]
                               [--seed=0] [--device=0] [--no-output-check] [--dry-run]
                               -o timings.json

Each variant's PTX is JIT-loaded and launched through the Python runtime (`mettle`), with the
workload's argument types as the kernel's signature; every
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
CU_DEVICE_ATTRIBUTE_INTEGRATED = 18


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


def workload_signature(wl):
    """The kernel's typed parameters as the workload declares them (a mettle.Signature):
    the runtime then checks and marshals every launch, as for compiled kernels."""
    import mettle
    params = [(a["buffer"], gpu_workload.DTYPE_NUMPY[wl.buffers[a["buffer"]].dtype] + "*")
              if "buffer" in a else (f"arg{i}", gpu_workload.DTYPE_NUMPY[a["type"]])
              for i, a in enumerate(wl.args)]
    return mettle.Signature.of(wl.kernel, params)


class Session:
    """The variants' kernels on one device, through the runtime (`mettle`): device
    arrays for the workload's buffers, typed launches, CUDA events."""

    def __init__(self, wl, ordinal: int):
        import numpy as np
        import mettle
        try:
            self.device = mettle.device(ordinal)
        except RuntimeError as exc:
            raise ToolError(f"{exc}; the collector needs an NVIDIA GPU and driver") from None
        self.wl, self.np, self.mettle = wl, np, mettle
        self.initial = {n: gpu_workload.host_bytes(b) for n, b in wl.buffers.items()}
        self.arrays = {n: mettle.empty(b.count, gpu_workload.DTYPE_NUMPY[b.dtype], ordinal)
                       for n, b in wl.buffers.items()}
        for name in self.arrays:
            self.upload(name)
        self.args = [self.arrays[a["buffer"]] if "buffer" in a else a["value"] for a in wl.args]

    def upload(self, name: str) -> None:
        array = self.arrays[name]
        array.copy_from(self.np.frombuffer(self.initial[name], array.dtype))

    def facts(self) -> dict:
        from mettle.providers.cuda import driver  # pants: no-infer-dep
        dev = self.device
        h = dev.driver.uuid
        major, minor = dev.compute_capability
        facts = {"device_uuid": f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}",
                 "device_name": dev.name, "compute_capability": f"{major}.{minor}",
                 "integrated_memory": bool(dev.attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED)),
                 "driver_version": driver.driver_version()}
        release = _driver_release()
        if release:
            facts["driver_release"] = release
        return facts

    def launcher(self, variant: dict):
        """The variant's kernel, loaded (a JIT failure reports the driver's error log)."""
        mettle = self.mettle
        module = mettle.Module("ptx", variant["ptx"], workload_signature(self.wl),
                               origin=variant["ptx_path"], device=self.device.ordinal)
        kernel = module[self.wl.kernel]
        try:
            kernel.plan()
        except mettle.LaunchError as exc:
            raise ToolError(f"{variant['ptx_path']}: {exc}") from None
        bound = kernel[self.wl.grid, self.wl.block]
        shared, args = self.wl.shared_bytes, self.args
        return lambda: bound(*args, shared=shared)

    def output_digest(self, launch) -> str:
        outs = [b for b in self.wl.buffers.values() if b.output]
        for b in outs:
            self.upload(b.name)
        launch()
        self.device.synchronize()
        return sha256_bytes(b"".join(self.arrays[b.name].numpy().tobytes() for b in outs))

    def time_ns(self, launch) -> int:
        start, end = self.mettle.Event().record(), self.mettle.Event()
        for _ in range(self.wl.launches_per_sample):
            launch()
        end.record()
        return int(round(start.elapsed_ms(end) * 1e6)) // self.wl.launches_per_sample

    def release(self) -> None:
        """Best-effort: after a kernel fault the context is unusable and every call fails,
        and that must not hide the error that caused it."""
        for array in self.arrays.values():
            try:
                array.free()
            except RuntimeError:
                break


def run_rounds(session, launches, args) -> tuple[list[list[int]], list[list[int]]]:
    """Separate warm-up per variant, then seeded randomly ordered paired rounds."""
    for launch in launches:
        for _ in range(args.warmup):
            launch()
        session.device.synchronize()
    rng = random.Random(args.seed)
    samples: list[list[int]] = [[] for _ in launches]
    orders = []
    for _ in range(args.rounds):
        order = list(range(len(launches)))
        rng.shuffle(order)
        orders.append(order)
        for i in order:
            samples[i].append(session.time_ns(launches[i]))
    return samples, orders


def measure(args, wl, variants) -> tuple[dict, list, list]:
    import mettle
    from mettle.providers.cuda.driver import CudaError  # pants: no-infer-dep
    session = Session(wl, args.device)
    try:
        facts = session.facts()
        launches = [session.launcher(v) for v in variants]
        if not args.no_output_check:
            digests = [session.output_digest(launch) for launch in launches]
            for v, d in zip(variants, digests):
                v["outputs_sha256"] = d
            if len(set(digests)) > 1:
                raise ToolError("variants disagree on the output buffers: " + ", ".join(
                    f"{v['name']}={d[:12]}" for v, d in zip(variants, digests)))
        samples, orders = run_rounds(session, launches, args)
        return facts, samples, orders
    except (CudaError, mettle.LaunchError) as exc:
        raise ToolError(str(exc)) from None
    finally:
        session.release()


def _driver_release() -> str | None:
    """Kernel-module release (e.g. 580.159.04) from /proc, when the host exposes it."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


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
