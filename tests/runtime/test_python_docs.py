"""Every ```python example of docs/reference/python.md runs as written (each in a fresh
interpreter, against the fake CUDA driver, in a directory holding the page's kernels.mettle
and a packaged dist/app/kernels.ptx with its signature sidecar). The torch example runs on
a stand-in torch (doc_stubs/torch). The page marks them `covered-by=` this file, so the
generic docs runner leaves them here; one naming another test is run there (the OpenCL
example runs on PoCL in test_opencl_pocl.py)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reference" / "python.md"
FENCE = re.compile(r"^```(python|mettle)([^\n]*)\n(.*?)^```", re.M | re.S)
STUBS = Path(__file__).with_name("doc_stubs")


def blocks(kind: str) -> list:
    text = DOC.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(2).split(), m.group(3))
            for m in FENCE.finditer(text) if m.group(1) == kind]


EXAMPLES = [pytest.param(code, id=f"python.md:{line}") for line, words, code in blocks("python")
            if not any(w.startswith("covered-by=") and "test_python_docs" not in w
                       for w in words)]


def test_the_page_has_an_example_of_each_topic():
    text = DOC.read_text(encoding="utf-8")
    for topic in ("## Compile", "## Launch with NumPy", "## Launch with torch",
                  "## Streams and events", "## The cache", "## Loading a packaged artifact"):
        section = text[text.index(topic):]
        assert "```python" in section[:section.find("\n## ", 3)], topic
    assert len(EXAMPLES) >= 6


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, fake_cuda_lib):
    work = tmp_path_factory.mktemp("docs")
    [(_, _, kernel)] = blocks("mettle")
    (work / "kernels.mettle").write_text(kernel)
    (work / "dist" / "app").mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--emit-ptx",
                           "kernels.mettle", "-o", "dist/app/kernels.ptx", "--gpu-arch=sm_90a",
                           "--emit-signature", "dist/app/kernels.ptx.sig.json"], cwd=work,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return work


@pytest.mark.parametrize("code", EXAMPLES)
def test_example_runs(code, workdir, fake_cuda_lib, tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "PYTHONPATH": os.pathsep.join([str(STUBS), str(ROOT)]),
           "METTLE_CUDA_DRIVER": str(fake_cuda_lib),
           "METTLE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, f"{code}\n--- stderr ---\n{proc.stderr}"
