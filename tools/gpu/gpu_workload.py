"""Workload descriptions for the measurement collector: parse, validate, hash, build data.

A workload names one kernel, its launch shape, its device buffers (size and deterministic
initialisation) and its ordered kernel arguments, so the collector can run any kernel.
Validation is hand-written (no jsonschema: the GPU machine may lack it) and reports every
problem at once. The workload hash is the SHA-256 of the canonical JSON of the whole
document, so measurements are bound to exactly the workload that produced them.
Host data needs numpy only for `iota` and `random_uniform`; nothing here touches a GPU.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from tools.gpu.tool_io import ToolError, canonical_json, load_json, sha256_bytes

SCHEMA = "mettle.gpu_workload/1"
# dtype -> (struct code, bytes); the struct code doubles as the numpy type via DTYPE_NUMPY.
DTYPES = {"u8": ("B", 1), "f16": ("e", 2), "f32": ("f", 4), "f64": ("d", 8),
          "i32": ("i", 4), "u32": ("I", 4), "i64": ("q", 8), "u64": ("Q", 8)}
DTYPE_NUMPY = {"u8": "uint8", "f16": "float16", "f32": "float32", "f64": "float64",
               "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64"}
INIT_KINDS = {"zeros": (), "constant": ("value",), "iota": (), "random_uniform": ("seed",)}


@dataclass(frozen=True)
class Buffer:
    name: str
    dtype: str
    count: int
    init: dict
    output: bool

    @property
    def nbytes(self) -> int:
        return self.count * DTYPES[self.dtype][1]


@dataclass(frozen=True)
class Workload:
    doc: dict
    sha256: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    buffers: dict[str, Buffer]
    args: list[dict]
    launches_per_sample: int

    def launch_json(self) -> dict:
        return {"grid": list(self.grid), "block": list(self.block),
                "shared_bytes": self.shared_bytes}


def _is_int(v, lo: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _dim3(v) -> bool:
    return isinstance(v, list) and len(v) == 3 and all(_is_int(x, 1) for x in v)


def _check_buffer(i: int, b, problems: list[str]) -> None:
    where = f"buffers[{i}]"
    if not isinstance(b, dict):
        problems.append(f"{where}: must be an object")
        return
    if not isinstance(b.get("name"), str) or not b.get("name"):
        problems.append(f"{where}.name: non-empty string required")
    if b.get("dtype") not in DTYPES:
        problems.append(f"{where}.dtype: one of {sorted(DTYPES)} required")
    if not _is_int(b.get("count"), 1):
        problems.append(f"{where}.count: positive integer required")
    if not isinstance(b.get("output", False), bool):
        problems.append(f"{where}.output: boolean required")
    init = b.get("init", {"kind": "zeros"})
    if not isinstance(init, dict) or init.get("kind") not in INIT_KINDS:
        problems.append(f"{where}.init.kind: one of {sorted(INIT_KINDS)} required")
        return
    for key in INIT_KINDS[init["kind"]]:
        if key not in init:
            problems.append(f"{where}.init.{key}: required for kind {init['kind']}")
    for key, val in init.items():
        if key != "kind" and (not isinstance(val, (int, float)) or isinstance(val, bool)):
            problems.append(f"{where}.init.{key}: number required")


def _check_arg(i: int, a, names: set, problems: list[str]) -> None:
    where = f"args[{i}]"
    if isinstance(a, dict) and set(a) == {"buffer"}:
        if a["buffer"] not in names:
            problems.append(f"{where}.buffer: no buffer named {a['buffer']!r}")
        return
    if not isinstance(a, dict) or set(a) != {"type", "value"}:
        problems.append(f"{where}: either {{\"buffer\": name}} or {{\"type\", \"value\"}}")
        return
    if a["type"] not in DTYPES or a["type"] == "f16":
        problems.append(f"{where}.type: one of {sorted(set(DTYPES) - {'f16'})} required")
        return
    try:
        pack_scalar(a["type"], a["value"])
    except (struct.error, TypeError, ToolError):
        problems.append(f"{where}.value: {a['value']!r} does not fit {a['type']}")


def validate(doc) -> list[str]:
    """Every problem with a workload document (empty list: valid)."""
    if not isinstance(doc, dict):
        return ["workload must be a JSON object"]
    problems = []
    if doc.get("schema") != SCHEMA:
        problems.append(f"schema: must be {SCHEMA!r}")
    if not isinstance(doc.get("kernel"), str) or not doc.get("kernel"):
        problems.append("kernel: entry function name required")
    launch = doc.get("launch")
    if not isinstance(launch, dict) or not _dim3(launch.get("grid")) \
            or not _dim3(launch.get("block")) or not _is_int(launch.get("shared_bytes", 0)):
        problems.append("launch: {grid: [x,y,z], block: [x,y,z], shared_bytes >= 0} required")
    bufs = doc.get("buffers")
    if not isinstance(bufs, list):
        problems.append("buffers: list required")
        bufs = []
    for i, b in enumerate(bufs):
        _check_buffer(i, b, problems)
    names = [b.get("name") for b in bufs if isinstance(b, dict)]
    if len(set(names)) != len(names):
        problems.append("buffers: names must be unique")
    args = doc.get("args")
    if not isinstance(args, list) or not args:
        problems.append("args: non-empty list required")
        args = []
    for i, a in enumerate(args):
        _check_arg(i, a, set(names), problems)
    if not _is_int(doc.get("launches_per_sample", 1), 1):
        problems.append("launches_per_sample: positive integer required")
    if not _is_int(doc.get("bytes_per_launch", 0)):
        problems.append("bytes_per_launch: non-negative integer required (used for GB/s)")
    return problems


def load_workload(path: str) -> Workload:
    doc = load_json(path, "workload")
    problems = validate(doc)
    if problems:
        raise ToolError(f"invalid workload {path}:\n  " + "\n  ".join(problems))
    launch = doc["launch"]
    buffers = {b["name"]: Buffer(b["name"], b["dtype"], b["count"],
                                 b.get("init", {"kind": "zeros"}), b.get("output", False))
               for b in doc["buffers"]}
    return Workload(doc, sha256_bytes(canonical_json(doc)), doc["kernel"],
                    tuple(launch["grid"]), tuple(launch["block"]),
                    launch.get("shared_bytes", 0), buffers, doc["args"],
                    doc.get("launches_per_sample", 1))


def pack_scalar(dtype: str, value) -> bytes:
    code = DTYPES[dtype][0]
    if code in "fd":
        return struct.pack("<" + code, float(value))
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolError(f"integer value required for {dtype}")
    return struct.pack("<" + code, value)


def host_bytes(buf: Buffer) -> bytes:
    """Initial contents of one buffer, deterministic for a given workload."""
    kind = buf.init["kind"]
    if kind == "zeros":
        return bytes(buf.nbytes)
    if kind == "constant":
        return pack_scalar(buf.dtype, buf.init["value"]) * buf.count
    try:
        import numpy as np  # lazy: only generated contents need it
    except ImportError:
        raise ToolError(f"buffer {buf.name}: init kind {kind} needs numpy") from None
    dtype = np.dtype(DTYPE_NUMPY[buf.dtype])
    if kind == "iota":
        idx = np.arange(buf.count, dtype=np.float64 if dtype.kind == "f" else np.int64)
        if "modulo" in buf.init:
            idx = idx % buf.init["modulo"]
        data = buf.init.get("start", 0) + buf.init.get("step", 1) * idx
    else:
        rng = np.random.default_rng(int(buf.init["seed"]))
        data = rng.uniform(buf.init.get("low", 0.0), buf.init.get("high", 1.0), buf.count)
    return data.astype(dtype).tobytes()
