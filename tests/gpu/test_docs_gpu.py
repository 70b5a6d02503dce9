"""The documentation's GPU steps on real hardware: every ```sh gpu, ```python gpu and
```mettle gpu block of README.md and docs/** (the quickstart's "run it on the GPU" steps
first) runs as the page says, against the machine's CUDA driver. Skips without a GPU
(conftest.py); tests/docs runs everything else of the same pages without one."""
from __future__ import annotations

import pytest

from tests.docs.pages import all_blocks
from tests.docs.runner import run

GPU_BLOCKS = [b for b in all_blocks() if "gpu" in b.attrs and b.lang in ("sh", "python")]


@pytest.mark.parametrize("block", GPU_BLOCKS, ids=lambda b: b.name)
def test_gpu_block_runs_on_the_gpu(tmp_path, block):
    proc = run(block, tmp_path, timeout=600)
    assert proc.returncode == 0, f"{block.text}\n{proc.stdout}\n{proc.stderr}"
    if block.output is not None:
        assert proc.stdout == block.output
