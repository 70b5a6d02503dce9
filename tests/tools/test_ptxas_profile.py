"""ptxas_profile.py with the real ptxas: fields, determinism, gates, missing-tool message."""
from __future__ import annotations

import json

import pytest

from tests.tools.variant_tool_helpers import DATA, run_tool
from tools.gpu import ptxas_runner
from tools.gpu.tool_io import sha256_file

SCALAR, VEC4 = DATA / "saxpy_scalar.ptx", DATA / "saxpy_vec4.ptx"


def spill_ptx(n: int = 300) -> str:
    """n volatile loads then n volatile stores in reverse order: all n values are live at
    once and volatile accesses cannot be rematerialised, so ptxas must spill past 255."""
    lines = [".version 8.0", ".target sm_90a", ".address_size 64",
             ".visible .entry spill(.param .u64 p)", "{", "  .reg .b64 %rd<2>;",
             f"  .reg .f32 %f<{n}>;", "  ld.param.u64 %rd1, [p];"]
    lines += [f"  ld.volatile.global.f32 %f{i}, [%rd1+{4 * i}];" for i in range(n)]
    lines += [f"  st.volatile.global.f32 [%rd1+{4 * (n - 1 - i)}], %f{i};" for i in range(n)]
    return "\n".join(lines + ["  ret;", "}", ""])


def profile(ptxas_path, out, *inputs, extra=()):
    return run_tool("ptxas_profile.py", "--arch", "sm_90a", "--ptxas", ptxas_path, *extra,
                    "-o", out, *inputs)


def test_profile_records_hashes_resources_and_classes(ptxas_path, tmp_path):
    out = tmp_path / "p.json"
    proc = profile(ptxas_path, out, SCALAR, SCALAR)
    assert proc.returncode == 1 and "defined in" in proc.stderr   # same entry twice
    proc = profile(ptxas_path, out, VEC4, extra=("--require-zero-spills",))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["performance_claim"] is False and doc["arch"] == "sm_90a"
    assert doc["inputs"] == [{"path": str(VEC4), "sha256": sha256_file(VEC4), "global_bytes": 0}]
    fn = doc["functions"]["saxpy"]
    assert fn["kind"] == "entry" and fn["assembled"] is True
    assert 8 <= fn["registers"] <= 255
    assert fn["spill_stores_bytes"] == fn["spill_loads_bytes"] == 0
    assert fn["shared_bytes"] == 0 and fn["barriers"] == 0
    assert fn["instruction_classes"]["global_load"] == 4      # 2 vector + 2 tail loads
    assert fn["instruction_classes"]["global_store"] == 2
    assert fn["instructions_total"] == sum(fn["instruction_classes"].values())


def test_shared_memory_and_barriers_come_from_ptxas(ptxas_path, tmp_path):
    src = tmp_path / "smem.ptx"
    src.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                   ".visible .entry k(.param .u64 p)\n{\n .reg .b64 %rd<2>; .reg .f32 %f<2>;\n"
                   " .shared .align 4 .b8 buf[2048];\n ld.param.u64 %rd1, [p];\n"
                   " ld.global.f32 %f1, [%rd1];\n st.shared.f32 [buf], %f1;\n bar.sync 0;\n"
                   " ld.shared.f32 %f1, [buf+4];\n st.global.f32 [%rd1], %f1;\n ret;\n}\n")
    assert profile(ptxas_path, tmp_path / "o.json", src).returncode == 0
    fn = json.loads((tmp_path / "o.json").read_text())["functions"]["k"]
    assert (fn["shared_bytes"], fn["barriers"]) == (2048, 1)


def test_repeat_is_byte_identical(ptxas_path, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        assert profile(ptxas_path, out, SCALAR, extra=("--require-zero-spills",)).returncode == 0
    assert a.read_bytes() == b.read_bytes()


def test_spill_gate_fails_and_writes_nothing(ptxas_path, tmp_path):
    src = tmp_path / "spill.ptx"
    src.write_text(spill_ptx())
    out = tmp_path / "spill.json"
    proc = profile(ptxas_path, out, src, extra=("--require-zero-spills",))
    assert proc.returncode == 1
    assert "resource gate violated" in proc.stderr and "spill stores" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    assert profile(ptxas_path, out, src).returncode == 0          # no gate: recorded
    fn = json.loads(out.read_text())["functions"]["spill"]
    assert fn["spill_stores_bytes"] > 0 and fn["registers"] == 255


def test_register_gate(ptxas_path, tmp_path):
    out = tmp_path / "r.json"
    assert profile(ptxas_path, out, SCALAR).returncode == 0
    regs = json.loads(out.read_text())["functions"]["saxpy"]["registers"]
    assert profile(ptxas_path, out, SCALAR, extra=(f"--max-registers={regs}",)).returncode == 0
    proc = profile(ptxas_path, out, SCALAR, extra=(f"--max-registers={regs - 1}",))
    assert proc.returncode == 1 and f"{regs} registers > --max-registers={regs - 1}" in proc.stderr


def test_missing_ptxas_is_a_clear_message(tmp_path, monkeypatch):
    proc = run_tool("ptxas_profile.py", "--arch", "sm_90a", "--ptxas", tmp_path / "nope",
                    "-o", tmp_path / "o.json", SCALAR)
    assert proc.returncode == 1 and "ptxas not found" in proc.stderr
    assert "METTLE_PTXAS" in proc.stderr and "Traceback" not in proc.stderr
    monkeypatch.setenv("METTLE_PTXAS", str(tmp_path / "gone"))
    with pytest.raises(Exception, match="METTLE_PTXAS names"):
        ptxas_runner.find_ptxas()


def test_assembler_errors_are_reported(ptxas_path, tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_90a\n.visible .entry k() { bogus.op; ret; }\n")
    proc = profile(ptxas_path, tmp_path / "o.json", bad)
    assert proc.returncode == 1 and "ptxas failed on" in proc.stderr


def test_parse_verbose_report():
    report = """ptxas info    : 0 bytes gmem, 24 bytes cmem[4]
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 2 barriers, 4096 bytes smem, 380 bytes cmem[0]
ptxas info    : Function properties for f
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
    k, f = ptxas_runner.parse_verbose(report)
    assert (k.name, k.registers, k.barriers, k.shared_bytes) == ("k", 40, 2, 4096)
    assert (k.stack_frame_bytes, k.spill_stores_bytes, k.spill_loads_bytes) == (16, 8, 4)
    assert k.constant_bytes == {"cmem[0]": 380}
    assert (f.name, f.registers, f.spill_stores_bytes) == ("f", None, 0)
