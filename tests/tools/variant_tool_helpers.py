"""Builders for synthetic profiles and measurement files used by the tool tests.

Synthetic profiles carry only what the selector reads, so each test states the resource
numbers it depends on; measurement files are bound to the profiles' real SHA-256.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The scripts run_tool starts by path: imported so Pants' dependency inference gives the
# tests that use them their sources (and those scripts' own imports).
import tools.gpu.collect_measurements  # noqa: F401
import tools.gpu.ptxas_profile  # noqa: F401
import tools.gpu.ptxas_select  # noqa: F401
import tools.gpu.variant_pipeline  # noqa: F401
from tools.gpu.tool_io import dump_stable, sha256_file

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
TOOLS = REPO / "tools" / "gpu"


def run_tool(script: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOLS / script), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, check=False)


def function(registers=32, spills=0, shared=0, gmi=4, kind="entry") -> dict:
    return {"kind": kind, "input": "k.ptx", "assembled": True, "registers": registers,
            "spill_stores_bytes": spills, "spill_loads_bytes": spills,
            "stack_frame_bytes": spills, "barriers": 0, "shared_bytes": shared,
            "constant_bytes": {}, "instruction_classes": {"global_load": gmi},
            "instructions_total": gmi, "global_memory_instructions": gmi}


def write_profile(path: Path, functions: dict) -> Path:
    doc = {"schema": "mettle.ptxas_profile/1", "arch": "sm_90a", "ptxas_version": "test",
           "gates": {"require_zero_spills": False, "max_registers": None},
           "inputs": [{"path": f"{path.stem}.ptx", "sha256": "0" * 64, "global_bytes": 0}],
           "functions": functions, "evidence": "synthetic", "performance_claim": False}
    path.write_text(dump_stable(doc))
    return path


def measurements(profiles: dict[str, Path], samples: dict[str, list[int]],
                 entry: str = "k", block=(256, 1, 1)) -> dict:
    rounds = len(next(iter(samples.values())))
    return {
        "schema": "mettle.variant_measurements/1",
        "run": {"device_uuid": "GPU-49f6560f-3ed5-eeed-9625-b1b105c8385a",
                "host_architecture": "x86_64", "compute_capability": "9.0",
                "integrated_memory": False, "driver_version": 13000,
                "rounds": rounds, "seed": 1},
        "entries": [{
            "entry": entry, "workload_sha256": "a" * 64,
            "launch": {"grid": [132, 1, 1], "block": list(block), "shared_bytes": 0},
            "candidates": [{"name": n, "profile_sha256": sha256_file(profiles[n]),
                            "samples_ns": s} for n, s in samples.items()]}],
    }


def write_json(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path
