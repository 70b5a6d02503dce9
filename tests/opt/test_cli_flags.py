"""The optimizer's command-line surface: -O, --verify-each, --dump-ir=after:PASS|all and
--explain, through the real `python -m toolchain.compiler` entry point."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from toolchain.compiler.ir.remarks import Remarks

REPO = Path(__file__).resolve().parents[2]

LOOP = """\
kernel scale(out: float32*, x: float32*, n: int32, a: float32) {
  var i: int32 = block.x * block_dim.x + thread.x;
  var s: float32 = 0.0;
  for (var j: int32 = 0; j < n; j += 1) {
    s += x[j] * (a * 2.0);
  }
  out[i] = s;
}
"""


def mettle(tmp_path, *args):
    src = tmp_path / "k.mettle"
    src.write_text(LOOP)
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", str(src), *args],
                          cwd=REPO, capture_output=True, text=True)


def test_explain_reports_hoists_with_source_lines(tmp_path):
    r = mettle(tmp_path, "--emit-ptx", "--gpu-arch=sm_90a", "-O", "--explain",
               "-o", str(tmp_path / "k.ptx"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "scale: line 4: licm: hoisted mul out of the loop at loop.cond" in lines
    assert all(re.fullmatch(r"\w+: line \d+: [\w.-]+: .+", l) for l in lines), lines
    assert (tmp_path / "k.ptx").exists()


def test_dump_after_one_pass_and_all(tmp_path):
    r = mettle(tmp_path, "--emit-ptx", "--gpu-arch=sm_90a", "-O", "--dump-ir=after:mem2reg",
               "-o", str(tmp_path / "k.ptx"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("; after ") == 1 and "; after mem2reg: @scale" in r.stderr
    assert " = phi i32 [0:i32, entry]" in r.stderr and "local.get" not in r.stderr
    r = mettle(tmp_path, "--dump-ir=after:all", "--verify-each", "--emit-spirv",
               "-o", str(tmp_path / "k.spv"))
    assert r.returncode == 0, r.stderr
    for name in ("mem2reg", "gvn", "licm", "dce", "out-of-ssa"):
        assert f"; after {name}: @scale" in r.stderr


def test_dump_after_rejects_unknown_passes(tmp_path):
    r = mettle(tmp_path, "--dump-ir=after:nosuch")
    assert r.returncode == 2 and "E0090" in r.stderr and "no such pass" in r.stderr
    r = mettle(tmp_path, "--dump-ir=before:mem2reg")
    assert r.returncode == 2 and "expected --dump-ir=after:PASS" in r.stderr
    assert "Traceback" not in r.stderr


def test_optimized_ir_has_no_phis_and_no_redundant_loads(tmp_path):
    r = mettle(tmp_path, "-O", "--dump-ir", "--verify-each", "--emit-ptx", "--gpu-arch=sm_90a",
               "-o", str(tmp_path / "k.ptx"))
    assert r.returncode == 0, r.stderr
    assert " = phi " not in r.stdout
    assert r.stdout.count(" = load ") == 1      # PTX: ptxas unrolls, not unroll-runtime
    # SPIR-V has no assembler that unrolls: unroll-runtime copies the body x4, and no copy
    # loads an address another copy (or the same one) already loaded
    r = mettle(tmp_path, "-O", "--dump-ir", "--emit-spirv", "-o", str(tmp_path / "k.spv"))
    assert r.returncode == 0, r.stderr
    addrs = re.findall(r" = load f32 (%\d+)", r.stdout)
    assert len(addrs) == 5 and len(set(addrs)) == len(addrs)
    assert "loop.cond.by4:" in r.stdout and "loop.cond.rest:" in r.stdout


def test_remarks_report_is_sorted_and_stable():
    r = Remarks()
    r.add("zeta", 9, "licm", "b")
    r.add("alpha", 12, "gvn", "c")
    r.add("alpha", 3, "licm", "a")
    r.add("alpha", 3, "dce", "a2")
    r.add("alpha", None, "ptx", "whole function")
    assert r.format().splitlines() == [
        "alpha: line 0: ptx: whole function", "alpha: line 3: licm: a",
        "alpha: line 3: dce: a2", "alpha: line 12: gvn: c", "zeta: line 9: licm: b"]


def test_optimized_output_is_deterministic(tmp_path):
    """Same input and flags, byte-identical output, whatever the hash seed or addresses."""
    import os
    src = REPO / "tests" / "data" / "gpu_suite" / "rows.mettle"
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"rows{seed}.ptx"
        r = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--emit-ptx",
                            "--gpu-arch=sm_90a", "-O", str(src), "-o", str(out)], cwd=REPO,
                           capture_output=True, text=True,
                           env=dict(os.environ, PYTHONHASHSEED=seed))
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
