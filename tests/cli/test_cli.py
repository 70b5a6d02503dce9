"""The `mettle` CLI as a user runs it: output naming, profiles, diagnostics, exit codes.

Each case runs `python -m toolchain.compiler` in a temporary directory (the installed
`mettle` script is the same `cli:main`, checked below), so default output names, atomic
writes and "no output file on failure" are observed on a real file system.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from toolchain.compiler import cli

ROOT = Path(__file__).resolve().parents[2]
VADD = ROOT / "tests" / "data" / "kernels" / "vadd.mettle"
BROKEN = "kernel k(a: int32*) {\n  a[0] = missing;\n  a[1] = 1.5 % 2;\n}\n"


def mettle(*args, cwd: Path, env_extra=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def copy_source(tmp_path: Path, text: str | None = None, name: str = "k.mettle") -> Path:
    path = tmp_path / name
    path.write_text(VADD.read_text() if text is None else text)
    return path


def test_installed_script_and_module_are_the_same_program():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"mettle": "mettle.compiler.cli:main"}   # toolchain/ installs as mettle
    main_src = (ROOT / "toolchain" / "compiler" / "__main__.py").read_text()
    assert "from .cli import main" in main_src


@pytest.mark.parametrize("flag,suffix", [("--emit-ptx", ".ptx"), ("--emit-spirv", ".spv")])
def test_default_output_names(tmp_path, flag, suffix):
    src = copy_source(tmp_path)
    proc = mettle(flag, "--gpu-arch=sm_90a", src.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / f"k{suffix}").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mettle-")]


def test_default_object_and_executable_names(tmp_path):
    src = copy_source(tmp_path, "fn main() -> int32 { return 3; }\n", "prog.mettle")
    assert mettle(src.name, cwd=tmp_path).returncode == 0          # --emit-obj is the default
    assert (tmp_path / "prog.o").read_bytes()[:4] == b"\x7fELF"
    assert mettle("--build", src.name, cwd=tmp_path).returncode == 0
    assert subprocess.run([str(tmp_path / "prog")]).returncode == 3


@pytest.mark.parametrize("arch,version,target", [
    ("gb10", "8.8", "sm_121a"), ("portable", "6.4", "compute_75"),
    ("sm_90a", "8.8", "sm_90a"), ("compute_80", "8.8", "compute_80")])
def test_gpu_arch_profiles(tmp_path, arch, version, target, ptxas):
    src = copy_source(tmp_path)
    proc = mettle("--emit-ptx", f"--gpu-arch={arch}", src, "-o", "out.ptx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ptx = (tmp_path / "out.ptx").read_text()
    assert f".version {version}\n" in ptx and f".target {target}\n" in ptx
    ptxas(ptx, {"gb10": "sm_121a", "portable": "sm_75", "compute_80": "sm_80"}.get(arch, arch))


def test_ptx_version_flag_and_its_capability_check(tmp_path):
    src = copy_source(tmp_path)
    ok = mettle("--emit-ptx", "--gpu-arch=sm_90a", "--ptx-version=8.0", src, "-o", "a.ptx",
                cwd=tmp_path)
    assert ok.returncode == 0 and ".version 8.0\n" in (tmp_path / "a.ptx").read_text()
    bad = mettle("--emit-ptx", "--gpu-arch=sm_90a", "--ptx-version=7.0", src, "-o", "b.ptx",
                 cwd=tmp_path)
    assert bad.returncode == 1 and "error[E0503]" in bad.stderr and "8.0" in bad.stderr
    assert not (tmp_path / "b.ptx").exists()


def test_without_gpu_arch_and_without_nvidia_smi_the_default_is_gb10(tmp_path):
    src = copy_source(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = mettle("--emit-ptx", src, "-o", "d.ptx", cwd=tmp_path,
                  env_extra={"PATH": str(empty)})
    assert proc.returncode == 0, proc.stderr
    ptx = (tmp_path / "d.ptx").read_text()
    assert ".version 8.8\n" in ptx and ".target sm_121a\n" in ptx


def test_failed_compile_is_located_writes_nothing_and_never_traces(tmp_path):
    src = copy_source(tmp_path, BROKEN)
    (tmp_path / "k.ptx").write_text("stale")           # must survive: no partial overwrite
    proc = mettle("--emit-ptx", src.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "error[E0101]: undefined name `missing`" in proc.stderr
    assert " --> k.mettle:2:10" in proc.stderr
    assert "error[E0004]" in proc.stderr and " --> k.mettle:3:" in proc.stderr
    assert (tmp_path / "k.ptx").read_text() == "stale"


@pytest.mark.parametrize("spelling", [("--error-format=json",), ("--error-format", "json")],
                         ids=["equals", "space"])
def test_json_error_format(tmp_path, spelling):
    src = copy_source(tmp_path, BROKEN)
    proc = mettle("--emit-ptx", *spelling, src.name, cwd=tmp_path)
    assert proc.returncode == 1
    diags = json.loads(proc.stderr)["diagnostics"]
    assert diags[0] == {"severity": "error", "code": "E0101", "file": "k.mettle", "line": 2,
                        "column": 10, "message": "undefined name `missing`"}
    usage = mettle("--emit-ptx", "--bogus", *spelling, src.name, cwd=tmp_path)
    assert usage.returncode == 2
    assert json.loads(usage.stderr)["diagnostics"][0]["code"] == "E0090"


def test_at_most_one_hundred_errors_are_reported(tmp_path):
    body = "".join(f"  a[{i}] = undefined_{i};\n" for i in range(150))
    src = copy_source(tmp_path, f"kernel k(a: int32*) {{\n{body}}}\n")
    proc = mettle("--emit-ptx", "--error-format=json", src.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert len(json.loads(proc.stderr)["diagnostics"]) == 100


def test_dump_ir_prints_the_textual_ir(tmp_path):
    src = copy_source(tmp_path)
    proc = mettle("--dump-ir", "--emit-ptx", "--gpu-arch=sm_90a", src, "-o", "x.ptx",
                  cwd=tmp_path)
    assert proc.returncode == 0
    assert "kernel @vadd(%a: ptr<f32, global>" in proc.stdout
    assert "gpu.index u32 {axis=x, kind=thread}" in proc.stdout


def test_usage_errors_and_missing_inputs(tmp_path):
    assert mettle(cwd=tmp_path).returncode == 2
    assert mettle("--bogus", "x.mettle", cwd=tmp_path).returncode == 2
    missing = mettle("--emit-ptx", "nope.mettle", cwd=tmp_path)
    assert missing.returncode == 1 and "error[E0102]" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert mettle("version", cwd=tmp_path).stdout.startswith("mettle ")


def test_internal_errors_are_reported_plainly(tmp_path, monkeypatch, capsys):
    import toolchain.compiler.driver as driver

    def boom(*_args, **_kw):
        raise RuntimeError("synthetic failure")
    monkeypatch.setattr(driver, "compile_file", boom)
    src = copy_source(tmp_path)
    assert cli.main(["--emit-ptx", str(src), "-o", str(tmp_path / "z.ptx")]) == 70
    err = capsys.readouterr().err
    assert "internal compiler error: RuntimeError: synthetic failure" in err
    assert "Traceback" not in err and not (tmp_path / "z.ptx").exists()


def test_ml_opt_is_refused_with_gpu_output(tmp_path):
    src = copy_source(tmp_path)
    proc = mettle("--emit-ptx", "--ml-opt", src, cwd=tmp_path)
    assert proc.returncode == 2 and "--ml-opt" in proc.stderr


def test_dump_spirv_prints_the_disassembly_of_the_written_module(tmp_path):
    from toolchain.compiler.targets.spirv.disasm import disassemble
    src = copy_source(tmp_path)
    proc = mettle("--emit-spirv", "--dump-spirv", src, "-o", "k.spv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == disassemble((tmp_path / "k.spv").read_bytes())
    assert 'OpEntryPoint Kernel %6 "vadd"' in proc.stdout
    assert mettle("--emit-ptx", "--dump-spirv", src, cwd=tmp_path).returncode == 2
