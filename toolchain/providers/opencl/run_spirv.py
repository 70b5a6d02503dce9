"""Run one SPIR-V kernel on an OpenCL device and write its output buffers to files.

    python3 -m toolchain.providers.opencl.run_spirv KERNEL.spv NAME --global 1024 \
        [--local 64] --args ARGS.json [--report REPORT.json]
    python3 -m toolchain.providers.opencl.run_spirv --info      # devices and IL versions

ARGS.json is a list, one entry per kernel parameter, in order; relative paths are taken
from the JSON file's directory:
    {"kind": "buffer", "dtype": "float32", "file": "a.bin"}                 initial bytes
    {"kind": "buffer", "dtype": "float32", "count": 256, "output": "c.out"} zeroed, read back
    {"kind": "scalar", "dtype": "uint32", "value": 7}
    {"kind": "local", "size": 1024}                                         local memory
A buffer may have both "file" and "output". Exit status: 0 on success, 2 for bad arguments,
3 for an OpenCL failure (the message, with any build log, goes to stderr).
--report writes the chosen platform/device/IL version as JSON.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

from .host import OpenCL, OpenCLError, describe
from .session import Session

SCALARS = {
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16,
    "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


def _make_arg(session: Session, spec: dict, base: Path) -> object:
    kind = spec.get("kind")
    if kind == "local":
        return ("local", int(spec["size"]))
    if spec.get("dtype") not in SCALARS:
        raise ValueError(f"unknown dtype {spec.get('dtype')!r}")
    ctype = SCALARS[spec["dtype"]]
    if kind == "scalar":
        return ctype(spec["value"])
    if kind == "buffer":
        if "file" in spec:
            return session.buffer((base / spec["file"]).read_bytes())
        return session.buffer(nbytes=int(spec["count"]) * ctypes.sizeof(ctype))
    raise ValueError(f"unknown argument kind {kind!r}")


def run(args: argparse.Namespace) -> dict:
    specs = json.loads(Path(args.args).read_text())
    base = Path(args.args).resolve().parent
    session = Session()
    try:
        kern = session.kernel(session.build(Path(args.spv).read_bytes()), args.name)
        values = [_make_arg(session, s, base) for s in specs]
        session.set_args(kern, values)
        session.launch(kern, args.global_size, args.local_size)
        for spec, value in zip(specs, values):
            if spec.get("output"):
                (base / spec["output"]).write_bytes(session.read(value))
        return {k: v for k, v in session.info.items() if k != "handles"}
    finally:
        session.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a SPIR-V kernel through OpenCL.")
    ap.add_argument("spv", nargs="?")
    ap.add_argument("name", nargs="?")
    ap.add_argument("--global", dest="global_size", type=int, nargs="+")
    ap.add_argument("--local", dest="local_size", type=int, nargs="+")
    ap.add_argument("--args")
    ap.add_argument("--report")
    ap.add_argument("--info", action="store_true")
    args = ap.parse_args(argv)
    try:
        if args.info:
            recs = [{k: v for k, v in r.items() if k != "handles"} for r in describe(OpenCL())]
            print(json.dumps(recs, indent=2))
            return 0
        if not (args.spv and args.name and args.global_size and args.args):
            ap.error("KERNEL.spv, NAME, --global and --args are required")
        report = run(args)
    except OpenCLError as exc:
        print(f"run_spirv: {exc}", file=sys.stderr)
        return 3
    except (OSError, ValueError, KeyError) as exc:
        print(f"run_spirv: bad arguments: {exc}", file=sys.stderr)
        return 2
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
