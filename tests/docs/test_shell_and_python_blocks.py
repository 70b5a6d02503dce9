"""Every ```sh and ```python block of README.md and docs/** runs as the page says.

Shell blocks run in a temporary directory (tests/docs/runner.py); Python blocks run there
too, against the fake CUDA driver. Blocks that need a GPU are run by the hardware suite
(tests/gpu/test_docs_gpu.py); blocks too slow for here name the test that runs them.
"""
from __future__ import annotations

import ast
import re
from dataclasses import replace

import pytest

from toolchain.providers.cuda.fake import build as fake_build

from .pages import ATTRIBUTES, ROOT, RUN_ELSEWHERE, all_blocks
from .runner import run

BLOCKS = all_blocks("sh") + all_blocks("python")
RUN_HERE = [b for b in BLOCKS if not RUN_ELSEWHERE & set(b.attrs)]
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]+\b")


def commands(text: str) -> list[str]:
    """The block's command lines, comments and continuations folded away."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if line:
            out.append(line)
    return out


def program(command: str) -> str:
    """What a command runs: `./pants`, `pip`, a script's path or a `python -m` module."""
    words = [w for w in command.split() if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
    if words[0] in ("python", "python3") and len(words) > 1:
        words = words[2:] if words[1] == "-m" else words[1:]
    return words[0]


@pytest.fixture(scope="session")
def fake_driver(tmp_path_factory) -> str:
    if fake_build.compiler() is None:
        pytest.skip("no C compiler for the fake CUDA driver")
    return str(fake_build.build(tmp_path_factory.mktemp("fake")))


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_attributes_are_known(block):
    assert set(block.attrs) <= ATTRIBUTES[block.lang], block.attrs


@pytest.mark.parametrize("block", RUN_HERE, ids=lambda b: b.name)
def test_block_runs(tmp_path, block, fake_driver):
    proc = run(block, tmp_path, {"METTLE_CUDA_DRIVER": fake_driver,
                                 "METTLE_FAKE_CUDA_LOG": str(tmp_path / "driver.log")})
    assert proc.returncode == 0, f"{block.text}\n--- stdout\n{proc.stdout}\n--- stderr\n" \
                                 f"{proc.stderr}"
    assert "Traceback" not in proc.stderr
    if block.output is not None:
        assert proc.stdout == block.output


@pytest.mark.parametrize("block", [b for b in BLOCKS if "synopsis" in b.attrs],
                         ids=lambda b: b.name)
def test_synopsis_lines_have_placeholders(block):
    assert all(PLACEHOLDER.search(c) for c in commands(block.text)), block.text


@pytest.mark.parametrize("block", [b for b in BLOCKS if "covered-by" in b.attrs],
                         ids=lambda b: b.name)
def test_slow_blocks_name_the_test_that_runs_them(block):
    paths = [ROOT / p for p in block.attrs["covered-by"].split(",")]
    assert all(p.is_file() for p in paths), paths
    text = "".join(p.read_text(encoding="utf-8") for p in paths)
    if block.lang == "python":
        # the named test runs the page's python blocks itself, or makes every `mettle.` call
        # the block shows (e.g. the OpenCL launch, on PoCL)
        calls = set(re.findall(r"\bmettle\.\w+", block.text))
        assert block.page.name in text or all(c in text for c in calls), \
            f"{paths} neither reads {block.page.name} nor makes the calls {sorted(calls)}"
        return
    missing = [c for c in commands(block.text) if program(c).split("/")[-1] not in text]
    assert missing == []


def target_types() -> set[str]:
    found = set()
    for path in (ROOT / "toolchain" / "rules").rglob("*.py"):
        found |= set(re.findall(r'^\s+alias = "(\w+)"', path.read_text(encoding="utf-8"),
                                re.M))
    return found


@pytest.mark.parametrize("block", [b for b in BLOCKS if "build-file" in b.attrs],
                         ids=lambda b: b.name)
def test_build_file_excerpts_name_real_target_types(block):
    calls = [n.func.id for n in ast.walk(ast.parse(block.text))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert calls and set(calls) <= target_types(), calls


def test_gpu_blocks_are_also_run_by_the_hardware_suite():
    assert (ROOT / "tests" / "gpu" / "test_docs_gpu.py").is_file()
    assert [b for b in BLOCKS if "gpu" in b.attrs], "the quickstart has GPU steps"


@pytest.mark.parametrize("block", [b for b in BLOCKS if "partial" in b.attrs],
                         ids=lambda b: b.name)
def test_partial_python_is_really_partial(tmp_path, block, fake_driver):
    """Run alone, a partial Python block fails (a name its wrap defines is missing)."""
    alone = replace(block, attrs={k: v for k, v in block.attrs.items() if k != "partial"},
                    steps=[])
    proc = run(alone, tmp_path, {"METTLE_CUDA_DRIVER": fake_driver})
    assert proc.returncode != 0 and "NameError" in proc.stderr, proc.stderr
