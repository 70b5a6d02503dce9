"""mettle.load: a packaged artifact (what mettle_kernel builds: the module plus the signature
sidecar that `mettle --emit-signature` writes) launches with the same checks as a compiled
module."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mettle
from toolchain.compiler.signature import FORMAT

ROOT = Path(__file__).resolve().parents[2]
SOURCE = """kernel vadd(a: float32*, b: float32*, c: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { c[i] = a[i] + b[i]; }
}
kernel kinds(p: uint8*, q: bool, n: uint64) { }
"""


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolchain.compiler", *args], cwd=cwd,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})


@pytest.fixture
def packaged(tmp_path) -> Path:
    (tmp_path / "k.mettle").write_text(SOURCE)
    proc = cli("--emit-ptx", "k.mettle", "-o", "k.ptx", "--gpu-arch=sm_90a",
               "--emit-signature", "k.ptx.sig.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "k.ptx"


def test_the_sidecar_is_the_typed_parameter_list(packaged):
    doc = json.loads(packaged.with_name("k.ptx.sig.json").read_text())
    assert doc["format"] == FORMAT and doc["target"] == "ptx"
    vadd, kinds = doc["kernels"]
    assert [(p["name"], p["type"], p["kind"]) for p in vadd["params"]] == [
        ("a", "float32*", "pointer"), ("b", "float32*", "pointer"), ("c", "float32*", "pointer"),
        ("n", "int32", "scalar")]
    assert [(p["type"], p.get("element"), p["size"]) for p in kinds["params"]] == [
        ("uint8*", "uint8", 8), ("bool", None, 1), ("uint64", None, 8)]


def test_a_packaged_artifact_launches_typed(packaged, fake_driver):
    mod = mettle.load(packaged)
    assert mod.kernels == ["vadd", "kinds"] and mod.origin == str(packaged)
    n = 64
    a, b = mettle.to_device(np.ones(n, np.float32)), mettle.to_device(np.ones(n, np.float32))
    c = mettle.empty(n, "float32")
    mod.vadd[1, 64](a, b, c, n)
    np.testing.assert_array_equal(c.numpy(), np.full(n, 2.0, np.float32))
    with pytest.raises(TypeError, match=r"kernel vadd: parameter 3 `n` \(int32\): expected an "
                       "integer, got float"):
        mod.vadd[1, 64](a, b, c, 64.0)
    mod.kinds[1, 1](mettle.zeros(2, "uint8"), True, (1 << 64) - 1)


def test_a_missing_sidecar_says_how_to_make_one(packaged):
    packaged.with_name("k.ptx.sig.json").unlink()
    with pytest.raises(FileNotFoundError, match="has no signature sidecar .*k.ptx.sig.json: "
                       "build it with mettle_kernel"):
        mettle.load(packaged)


def test_signature_may_be_given(packaged, tmp_path):
    sidecar = packaged.with_name("k.ptx.sig.json")
    moved = tmp_path / "elsewhere.json"
    sidecar.rename(moved)
    assert mettle.load(packaged, signature=moved).kernels == ["vadd", "kinds"]
    doc = json.loads(moved.read_text())
    assert mettle.load(packaged, signature=doc).kernels == ["vadd", "kinds"]
    with pytest.raises(ValueError, match="describes a ptx module, not spirv"):
        spv = tmp_path / "k.spv"
        spv.write_bytes(b"\x03\x02\x23\x07")
        mettle.load(spv, signature=doc)
    with pytest.raises(ValueError, match="not a mettle.signature/1 document"):
        mettle.load(packaged, signature={"kernels": []})


def test_emit_signature_needs_gpu_output(tmp_path):
    (tmp_path / "k.mettle").write_text(SOURCE)
    proc = cli("--emit-obj", "k.mettle", "--emit-signature", "x.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--emit-signature needs --emit-ptx or --emit-spirv" in proc.stderr


def test_spirv_sidecar(tmp_path):
    (tmp_path / "k.mettle").write_text(SOURCE)
    proc = cli("--emit-spirv", "k.mettle", "-o", "k.spv", "--emit-signature", "k.spv.sig.json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    mod = mettle.load(tmp_path / "k.spv")
    assert mod.target == "spirv" and mod.kernels == ["vadd", "kinds"]


def test_signatures_for_hand_written_ptx_round_trip():
    sig = mettle.Signature.of("probe", [("out", "uint8*"), ("p", "void*"), ("k", "uint32"),
                                        ("ok", "bool")], block=(32, 1, 1))
    probe = sig.kernels["probe"]
    assert str(probe) == "probe(out: uint8*, p: void*, k: uint32, ok: bool)"
    assert [(p.kind, p.size, p.dtype) for p in probe.params] == [
        ("pointer", 8, "uint8"), ("pointer", 8, None), ("scalar", 4, None), ("scalar", 1, None)]
    assert mettle.Signature.from_json(sig.to_json()) == sig
    with pytest.raises(ValueError, match="probe: parameter x: unknown type 'int128'"):
        mettle.Signature.of("probe", [("x", "int128")])


def test_a_parameter_kind_the_runtime_cannot_pass_is_refused_by_name(fake_driver, tmp_path):
    (tmp_path / "k.mettle").write_text(SOURCE)
    proc = cli("--emit-ptx", "k.mettle", "-o", "k.ptx", "--gpu-arch=sm_90a",
               "--emit-signature", "k.ptx.sig.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "k.ptx.sig.json").read_text())
    doc["kernels"][0]["params"][3] = {"name": "n", "type": "struct Pair", "kind": "aggregate",
                                      "size": 8}
    mod = mettle.load(tmp_path / "k.ptx", signature=doc)
    with pytest.raises(mettle.LaunchError, match="kernel vadd: parameter `n` has type struct "
                       "Pair, which this runtime cannot pass"):
        mod.vadd[1, 1](None, None, None, b"12345678")
