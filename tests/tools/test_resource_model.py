"""Residency bounds under the shipped models, checked against worked occupancy examples."""
from __future__ import annotations

import json

import pytest

from tools.gpu import resource_model as rm
from tools.gpu.tool_io import ToolError


@pytest.fixture(scope="module")
def sm90():
    return rm.load_model("sm_90")


def test_shipped_models_state_sources_and_limits():
    assert rm.builtin_models() == ["sm_121", "sm_90"]
    for name in rm.builtin_models():
        model = rm.load_model(name)
        assert model["sources"] and model["assumptions"]
    gb10 = rm.load_model("sm_121")
    assert (gb10["registers_per_sm"], gb10["shared_memory_per_sm"], gb10["max_warps_per_sm"],
            gb10["max_blocks_per_sm"], gb10["warp_size"]) == (65536, 102400, 48, 24, 32)
    assert gb10["register_allocation_unit"] == gb10["shared_memory_allocation_unit"] == 1


def test_warp_limited(sm90):
    # 256 threads = 8 warps; 64 warps/SM -> 8 blocks; 32 regs -> 1024 regs/warp -> 8 blocks.
    r = rm.residency(sm90, 256, 32, 0)
    assert (r.blocks_per_sm, r.occupancy) == (8, 1.0)
    assert r.limits["warps"] == 8 and "warps" in r.limiting


def test_register_limited_with_allocation_unit(sm90):
    # 40 regs * 32 lanes = 1280 -> 1280 (multiple of 256); 65536 / 1280 = 51 warps -> 6 blocks.
    r = rm.residency(sm90, 256, 40, 0)
    assert (r.blocks_per_sm, r.limiting, r.occupancy) == (6, ["registers"], 0.75)
    # 33 regs -> 1056 rounds up to 1280 as well, so the same bound.
    assert rm.residency(sm90, 256, 33, 0).blocks_per_sm == 6


def test_shared_memory_limited_includes_reserved_and_granularity(sm90):
    # 48 KiB + 1 KiB reserved = 50176 bytes per block; 233472 // 50176 = 4 blocks.
    r = rm.residency(sm90, 128, 16, 48 * 1024)
    assert (r.blocks_per_sm, r.limiting) == (4, ["shared_memory"])
    assert rm.residency(sm90, 128, 16, 300 * 1024).blocks_per_sm == 0   # over per-block max


def test_block_limited_and_headroom(sm90):
    r = rm.residency(sm90, 32, 16, 0)           # 1 warp per block: 32-block limit binds
    assert (r.blocks_per_sm, r.limiting, r.occupancy) == (32, ["blocks"], 0.5)
    # 32 warps * 512 regs = 16384 of 65536 used -> 0.75 of the register file left.
    assert r.headroom == 0.75


def test_too_many_registers_cannot_launch(sm90):
    assert rm.residency(sm90, 1024, 128, 0).blocks_per_sm == 0   # 128 * 1024 > 64K per block


def test_bad_models_and_block_sizes_are_errors(tmp_path, sm90):
    with pytest.raises(ToolError, match="unknown resource model"):
        rm.load_model("sm_00")
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"warp_size": 32}))
    with pytest.raises(ToolError, match="missing keys"):
        rm.load_model(str(bad))
    with pytest.raises(ToolError, match="threads per block"):
        rm.residency(sm90, 2048, 16, 0)
