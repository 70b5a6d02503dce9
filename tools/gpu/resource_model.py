"""Explicit per-SM resource models and the residency (occupancy) bounds they imply.

A model is a JSON file under resource_models/ (or any path) with the keys in REQUIRED_KEYS,
plus `sources` and `assumptions` that are copied into every selection so the evidence says
which limits were assumed. Bounds follow the CUDA occupancy calculator: registers are
allocated per warp in units of `register_allocation_unit`; shared memory per block is the
static size plus the reserved per-block amount rounded up to `shared_memory_allocation_unit`.
Residency is the minimum of the register-, shared-memory-, warp- and block-limited counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.gpu.tool_io import ToolError, load_json

MODELS_DIR = Path(__file__).resolve().parent / "resource_models"
REQUIRED_KEYS = ("warp_size", "threads_per_block", "max_threads_per_block", "max_warps_per_sm",
                 "max_blocks_per_sm", "registers_per_sm", "max_registers_per_block",
                 "max_registers_per_thread", "register_allocation_unit",
                 "shared_memory_per_sm", "max_shared_memory_per_block",
                 "shared_memory_allocation_unit", "reserved_shared_memory_per_block")


def builtin_models() -> list[str]:
    return sorted(p.stem for p in MODELS_DIR.glob("*.json"))


def load_model(name_or_path: str) -> dict:
    """A built-in model name (`sm_90`, `sm_121`) or a path to a model JSON file."""
    path = Path(name_or_path)
    if not path.suffix and (MODELS_DIR / f"{name_or_path}.json").is_file():
        path = MODELS_DIR / f"{name_or_path}.json"
    if not path.is_file():
        raise ToolError(f"unknown resource model {name_or_path!r}; built-in models: "
                        f"{', '.join(builtin_models())}, or pass a JSON file")
    model = load_json(path, "resource model")
    if not isinstance(model, dict):
        raise ToolError(f"resource model {path} must be a JSON object")
    missing = [k for k in REQUIRED_KEYS if k not in model]
    bad = [k for k in REQUIRED_KEYS if k in model and
           (not isinstance(model[k], int) or isinstance(model[k], bool) or model[k] < 0)]
    if missing or bad:
        raise ToolError(f"resource model {path}: missing keys {missing}, "
                        f"non-negative integers required for {bad}")
    for key in ("warp_size", "register_allocation_unit", "shared_memory_allocation_unit"):
        if model[key] == 0:
            raise ToolError(f"resource model {path}: {key} must be positive")
    return model


def _ceil_to(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class Residency:
    blocks_per_sm: int
    warps_per_block: int
    limits: dict[str, int]          # resource -> blocks per SM it alone allows
    occupancy: float                # resident warps / max warps per SM
    headroom: float                 # least unused fraction of registers and shared memory
    limiting: list[str]             # resources whose bound equals blocks_per_sm

    def to_json(self) -> dict:
        return {"blocks_per_sm": self.blocks_per_sm, "warps_per_block": self.warps_per_block,
                "limits": dict(sorted(self.limits.items())), "occupancy": self.occupancy,
                "headroom": self.headroom, "limiting": self.limiting}


def residency(model: dict, threads_per_block: int, registers: int, shared_bytes: int) -> Residency:
    """Blocks per SM for one kernel; 0 means it cannot launch with this block size."""
    if threads_per_block < 1 or threads_per_block > model["max_threads_per_block"]:
        raise ToolError(f"threads per block {threads_per_block} outside 1.."
                        f"{model['max_threads_per_block']} for model {model.get('name')}")
    warps = -(-threads_per_block // model["warp_size"])
    regs_per_warp = _ceil_to(max(registers, 1) * model["warp_size"],
                             model["register_allocation_unit"])
    smem = _ceil_to(shared_bytes + model["reserved_shared_memory_per_block"],
                    model["shared_memory_allocation_unit"])
    limits = {
        "warps": model["max_warps_per_sm"] // warps,
        "blocks": model["max_blocks_per_sm"],
        "registers": (model["registers_per_sm"] // regs_per_warp) // warps,
        "shared_memory": (model["shared_memory_per_sm"] // smem if smem
                          else model["max_blocks_per_sm"]),
    }
    if (registers > model["max_registers_per_thread"]
            or regs_per_warp * warps > model["max_registers_per_block"]):
        limits["registers"] = 0
    if shared_bytes > model["max_shared_memory_per_block"]:
        limits["shared_memory"] = 0
    blocks = min(limits.values())
    used_regs = blocks * warps * regs_per_warp
    used_smem = blocks * smem
    headroom = min(1 - used_regs / model["registers_per_sm"],
                   1 - used_smem / model["shared_memory_per_sm"])
    return Residency(
        blocks_per_sm=blocks, warps_per_block=warps, limits=limits,
        occupancy=round(blocks * warps / model["max_warps_per_sm"], 6),
        headroom=round(headroom, 6),
        limiting=sorted(k for k, v in limits.items() if v == blocks))
