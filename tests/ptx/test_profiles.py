"""Profile resolution, local-GPU detection and every capability refusal (E0501-E0504)."""
import subprocess

import pytest

from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.ir import I32, U32, ptr
from toolchain.compiler.targets.ptx import detect_local_arch, profiles, resolve_profile

from .helpers import emit
from .kernels import build_atomics, build_packed, build_subgroup, start


@pytest.mark.parametrize("arch, version, target", [
    ("gb10", "8.8", "sm_121a"),
    ("portable", "6.4", "compute_75"),
    ("sm_90a", "8.8", "sm_90a"),
    ("sm_80", "8.8", "sm_80"),
    ("compute_90", "8.8", "compute_90"),
    ("sm_120a", "8.8", "sm_120a"),
])
def test_named_profiles(arch, version, target):
    p = resolve_profile(arch, None)
    assert (p.version, p.target) == (version, target)


def test_explicit_version_overrides_default():
    p = resolve_profile("sm_90a", "8.0")
    assert (p.version, p.target) == ("8.0", "sm_90a")
    assert resolve_profile("portable", "7.0").version == "7.0"


def test_header_carries_profile():
    m, b, _ = start("k", [])
    b.ret()
    text = emit(m, "sm_90a", "8.3")
    assert ".version 8.3\n.target sm_90a\n.address_size 64" in text
    assert text.startswith("// ")


def _diag(excinfo):
    d = excinfo.value.diagnostics[0]
    return d.code, d.message


@pytest.mark.parametrize("arch", ["sm_91", "gfx90a", "sm_75a", "sm_80a", "compute_", "SM_90",
                                  "sm_9"])
def test_bad_arch_strings(arch):
    with pytest.raises(CompileError) as e:
        resolve_profile(arch, None)
    code, msg = _diag(e)
    assert code == "E0501" and arch in msg


@pytest.mark.parametrize("version", ["9.1", "10.0", "8", "eight", "8.9", "6.7"])
def test_bad_ptx_versions(version):
    with pytest.raises(CompileError) as e:
        resolve_profile("sm_90a", version)
    code, msg = _diag(e)
    assert code == "E0502" and version in msg


@pytest.mark.parametrize("arch, version, needed", [
    ("sm_90a", "7.8", "8.0"), ("sm_100a", "8.5", "8.6"), ("sm_120a", "8.6", "8.7"),
    ("sm_121a", "8.7", "8.8"), ("sm_80", "6.5", "7.0"), ("sm_75", "6.2", "6.3"),
    ("portable", "6.0", "6.3"),
])
def test_isa_too_old_for_target(arch, version, needed):
    with pytest.raises(CompileError) as e:
        resolve_profile(arch, version)
    code, msg = _diag(e)
    target = "compute_75" if arch == "portable" else arch
    assert code == "E0503"
    assert f"needs PTX ISA {needed}" in msg and target in msg and version in msg


def _one_op(op, arity):
    m, b, f = start("one", [("p", ptr(U32, "global"))])
    v = b.load(f.params[0])
    b.store(f.params[0], b.intrinsic(op, U32, [v] * arity, {"signed": False}))
    b.ret()
    return m


@pytest.mark.parametrize("build, arch, version, needs", [
    (build_packed, "sm_60", "6.0", ("5.0", "sm_61")),          # dp4a
    (lambda: _one_op("half2.add", 2), "sm_52", "6.0", ("4.2", "sm_53")),
    (lambda: _one_op("int.dp2a", 3), "sm_53", "6.0", ("5.0", "sm_61")),
    (build_atomics, "sm_62", "6.0", ("6.0", "sm_70")),         # scoped atomics
    (build_subgroup, "sm_70", "6.1", ("6.2", "sm_30")),        # activemask
])
def test_op_needing_newer_target(build, arch, version, needs):
    with pytest.raises(CompileError) as e:
        emit(build(), arch, version)
    code, msg = _diag(e)
    assert code == "E0504"
    assert f"PTX ISA {needs[0]}" in msg and needs[1] in msg
    assert f"PTX {version} / {arch}" in msg


def test_local_arch_detection(monkeypatch):
    def fake(out, rc=0):
        def run(cmd, **kw):
            assert cmd[0] == "nvidia-smi" and kw.get("timeout", 99) <= 5
            return subprocess.CompletedProcess(cmd, rc, out, "")
        return run
    monkeypatch.setattr(subprocess, "run", fake("9.0\n9.0\n"))
    assert detect_local_arch() == "sm_90a"
    monkeypatch.setattr(subprocess, "run", fake("8.6\n"))
    assert detect_local_arch() == "sm_86"
    monkeypatch.setattr(subprocess, "run", fake("12.1\n"))
    assert detect_local_arch() == "sm_121a"
    assert resolve_profile(None, None).target == "sm_121a"
    monkeypatch.setattr(subprocess, "run", fake("", rc=9))
    assert detect_local_arch() is None


def test_local_arch_absent_falls_back_to_gb10(monkeypatch):
    def missing(cmd, **kw):
        raise FileNotFoundError(cmd[0])
    monkeypatch.setattr(subprocess, "run", missing)
    assert detect_local_arch() is None
    p = resolve_profile(None, None)
    assert (p.version, p.target) == ("8.8", "sm_121a")


def test_unsupported_ir_is_a_diagnostic_not_a_crash():
    m, b, f = start("bad", [("p", ptr(I32, "global"))])
    b.intrinsic("math.sin", I32, [b.load(f.params[0])])
    b.ret()
    with pytest.raises(CompileError) as e:
        emit(m)
    assert _diag(e)[0] == "E0505"
