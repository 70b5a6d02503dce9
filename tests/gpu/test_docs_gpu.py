"""The documentation's GPU steps on real hardware: every ```sh and ```python block marked
`gpu` or `gpu-only` in README.md and docs/** (the quickstart's Python and host-program
runs among them) runs as the page says, against the machine's CUDA driver. Skips without a
GPU (conftest.py); tests/docs runs the `gpu` ones against the fake driver as well."""
from __future__ import annotations

import pytest

from tests.docs.pages import all_blocks
from tests.docs.runner import run

GPU_BLOCKS = [b for b in all_blocks() if {"gpu", "gpu-only"} & set(b.attrs)]


@pytest.mark.parametrize("block", GPU_BLOCKS, ids=lambda b: b.name)
def test_gpu_block_runs_on_the_gpu(tmp_path, block):
    proc = run(block, tmp_path, timeout=600)
    assert proc.returncode == 0, f"{block.text}\n{proc.stdout}\n{proc.stderr}"
    if block.output is not None:
        assert proc.stdout == block.output
