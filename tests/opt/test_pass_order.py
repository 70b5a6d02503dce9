"""The GPU pipeline runs functions in groups, pass by pass (opt/manager.py `_levels`,
`_run_group`): helpers by call depth, then the kernels. That order is for compile time
only, so it must change nothing: every repository kernel source compiles to the same PTX,
SPIR-V and remarks as when each function runs the whole pipeline alone."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file
from toolchain.compiler.frontend.api import compile_to_ir
from toolchain.compiler.opt import manager
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(str(p.relative_to(REPO)) for pattern in (
    "tests/data/kernels/*.mettle", "tests/data/gpu_suite/*.mettle", "app/*.mettle",
    "bench/kernels/*.mettle") for p in REPO.glob(pattern))

NESTED = """
fn leaf(x: float32) -> float32 { return x * 2.0; }
fn other_leaf(x: float32) -> float32 { return x + 1.0; }
fn mid(x: float32) -> float32 { return leaf(x) + other_leaf(x); }
fn top(x: float32) -> float32 { return mid(x) * leaf(x); }
kernel k1(a: float32*, n: int32) {
  var i: int32 = block.x * block_dim.x + thread.x;
  if (i < n) { a[i] = top(a[i]); }
}
kernel k2(a: float32*, n: int32) {
  var i: int32 = thread.x;
  if (i < n) { a[i] = leaf(a[i]) + mid(a[i]); }
}
"""


def test_levels_put_callees_first_and_kernels_last(tmp_path):
    src = tmp_path / "nested.mettle"
    src.write_text(NESTED)
    module, _ = compile_to_ir(str(src), gpu=True, ssa=True)
    calls: dict = {}
    groups = manager._levels(manager._functions(module, True, calls), calls)
    names = [[f.name for f in g] for g in groups]
    assert names == [["leaf", "other_leaf"], ["mid"], ["top"], ["k1", "k2"]]
    placed = {f: n for n, g in enumerate(groups) for f in g}
    for fn, sites in calls.items():
        for call in sites:
            callee = call.operands[0]
            if not callee.is_kernel:
                assert placed[callee] < placed[fn], (callee.name, fn.name)


def _outputs(path: str) -> tuple:
    out = []
    for emit in ("ptx", "spirv"):
        try:
            r = compile_file(str(REPO / path), Options(emit=emit, gpu_arch="sm_90a",
                                                       optimize=True, explain=True))
        except CompileError as e:           # (a program one target refuses: same refusal)
            out.append(str(e))
            continue
        out.append((r.data, r.explain))
    return tuple(out)


@pytest.mark.parametrize("path", SOURCES)
def test_group_order_changes_no_output(path, monkeypatch):
    grouped = _outputs(path)
    monkeypatch.setattr(manager, "_levels", lambda functions, calls: [[f] for f in functions])
    alone = _outputs(path)
    assert grouped == alone
