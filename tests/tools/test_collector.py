"""collect_measurements.py and variant_pipeline.py without a GPU (dry runs, documents), plus
one `gpu`-marked end-to-end run that needs the CUDA driver."""
from __future__ import annotations

import argparse
import ctypes.util
import json
from pathlib import Path

import pytest

from tests.tools.variant_tool_helpers import DATA, REPO, run_tool
from tools.gpu import collect_measurements as cm
from tools.gpu import gpu_workload as gw
from tools.gpu.measured_selection import validate_measurements
from tools.gpu.tool_io import ToolError, canonical_json, sha256_bytes, sha256_file

WORKLOAD = DATA / "saxpy_workload.json"
PTX = {v: DATA / f"saxpy_{v}.ptx" for v in ("scalar", "vec4")}


def has_cuda_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.fixture
def profiles(ptxas_path, tmp_path):
    out = {}
    for v, ptx in PTX.items():
        out[v] = tmp_path / f"saxpy_{v}.profile.json"
        proc = run_tool("ptxas_profile.py", "--arch", "sm_90a", "--ptxas", ptxas_path,
                        "-o", out[v], ptx)
        assert proc.returncode == 0, proc.stderr
    return out


def variant_args(profiles) -> list[str]:
    return [a for v in PTX for a in ("--variant", str(PTX[v]), str(profiles[v]))]


def test_importing_needs_no_gpu():
    assert hasattr(cm, "Session") and cm.SCHEMA == "mettle.variant_measurements/1"


def test_dry_run_validates_without_a_device(profiles):
    proc = run_tool("collect_measurements.py", "--dry-run", "--workload", WORKLOAD,
                    *variant_args(profiles))
    assert proc.returncode == 0, proc.stderr
    assert gw.load_workload(str(WORKLOAD)).sha256 in proc.stdout
    assert "no device was used" in proc.stdout


def test_ptx_must_be_an_input_of_its_profile(profiles):
    proc = run_tool("collect_measurements.py", "--dry-run", "--workload", WORKLOAD,
                    "--variant", PTX["vec4"], profiles["scalar"],
                    "--variant", PTX["scalar"], profiles["vec4"])
    assert proc.returncode == 1 and "does not profile" in proc.stderr


def test_few_rounds_are_flagged(profiles):
    proc = run_tool("collect_measurements.py", "--dry-run", "--rounds", "5",
                    "--workload", WORKLOAD, *variant_args(profiles))
    assert proc.returncode == 0 and "5 rounds < 21" in proc.stderr


def test_workload_problems_are_all_reported(tmp_path, profiles):
    doc = json.loads(WORKLOAD.read_text())
    doc["launch"]["grid"] = [0, 1, 1]
    doc["buffers"][0]["dtype"] = "f128"
    doc["args"][3] = {"type": "u32", "value": -1}
    doc["args"].append({"buffer": "missing"})
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps(doc))
    proc = run_tool("collect_measurements.py", "--dry-run", "--workload", bad,
                    *variant_args(profiles))
    assert proc.returncode == 1
    for needle in ("launch:", "buffers[0].dtype", "args[3].value", "args[5].buffer"):
        assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_workload_hash_is_of_canonical_json(tmp_path):
    doc = json.loads(WORKLOAD.read_text())
    shuffled = tmp_path / "w.json"
    shuffled.write_text(json.dumps(dict(reversed(list(doc.items()))), indent=7))
    wl = gw.load_workload(str(shuffled))
    assert wl.sha256 == sha256_bytes(canonical_json(doc)) == gw.load_workload(str(WORKLOAD)).sha256
    assert wl.sha256 != sha256_file(WORKLOAD)          # file bytes are not what is hashed


def test_host_data_is_deterministic():
    buf = gw.Buffer("x", "f32", 6, {"kind": "iota", "start": 1, "step": 0.5, "modulo": 4}, False)
    import struct
    assert struct.unpack("<6f", gw.host_bytes(buf)) == (1.0, 1.5, 2.0, 2.5, 1.0, 1.5)
    rnd = gw.Buffer("y", "f32", 1000, {"kind": "random_uniform", "seed": 3, "low": -1,
                                      "high": 1}, False)
    assert gw.host_bytes(rnd) == gw.host_bytes(rnd)
    assert gw.host_bytes(gw.Buffer("z", "u32", 3, {"kind": "constant", "value": 7}, True)) \
        == struct.pack("<3I", 7, 7, 7)


def test_collected_document_is_schema_valid(profiles):
    pytest.importorskip("jsonschema")
    wl = gw.load_workload(str(WORKLOAD))
    variants = cm.load_variants([[str(PTX[v]), str(profiles[v])] for v in PTX], wl.kernel)
    args = argparse.Namespace(rounds=3, warmup=1, seed=9)
    facts = {"device_uuid": "GPU-00000000-1111-2222-3333-444444444444",
             "device_name": "test", "compute_capability": "9.0",
             "integrated_memory": False, "driver_version": 13000}
    doc = cm.build_document(args, wl, variants, facts, [[5, 6, 7], [4, 5, 6]],
                            [[0, 1], [1, 0], [0, 1]])
    validate_measurements(doc, "collector document")
    assert cm.validate_if_possible(doc).startswith("output validated")
    ent = doc["entries"][0]
    assert ent["workload_sha256"] == wl.sha256
    assert [c["profile_sha256"] for c in ent["candidates"]] == \
        [sha256_file(profiles[v]) for v in PTX]


@pytest.mark.skipif(has_cuda_driver(), reason="a CUDA driver is present on this machine")
def test_missing_driver_is_a_clear_message(profiles, tmp_path):
    proc = run_tool("collect_measurements.py", "--workload", WORKLOAD, *variant_args(profiles),
                    "-o", tmp_path / "t.json")
    assert proc.returncode == 1 and "libcuda.so.1" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "t.json").exists()


@pytest.fixture
def fake_cuda(tmp_path_factory, monkeypatch):
    """The fake CUDA driver (toolchain/providers/cuda/fake) for the collector's subprocess."""
    from tests.support import fake_cuda
    lib = fake_cuda.build_library(tmp_path_factory)
    log = tmp_path_factory.mktemp("log") / "calls.log"
    return fake_cuda.use(lib, log, monkeypatch)


def test_collects_through_the_runtime_on_the_fake_driver(profiles, tmp_path, fake_cuda):
    """The whole measurement path without a GPU: a small saxpy workload, both variants
    loaded, checked (identical outputs) and timed in paired rounds through `mettle`."""
    doc = json.loads(WORKLOAD.read_text())
    for b in doc["buffers"]:
        b["count"] = 1027
    doc["launch"]["grid"] = [4, 1, 1]
    doc["args"][-1]["value"] = 1027
    small = tmp_path / "small.json"
    small.write_text(json.dumps(doc))
    proc = run_tool("collect_measurements.py", "--workload", small, *variant_args(profiles),
                    "--rounds", "3", "--warmup", "1", "-o", tmp_path / "t.json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "t.json").read_text())
    assert out["run"]["device_name"] == "Mettle fake CUDA device"
    assert out["run"]["device_uuid"] == "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"
    cands = out["entries"][0]["candidates"]
    assert [c["samples_ns"] for c in cands] == [[1_000_000] * 3] * 2   # the fake's 1 ms
    assert len({c["outputs_sha256"] for c in cands}) == 1
    launches = fake_cuda.calls("cuLaunchKernel")
    assert len(launches) == 2 * (1 + 1 + 3)          # output check, warm-up, rounds
    assert {(c["kernel"], c["gx"], c["bx"]) for c in launches} == {('"saxpy"', "4", "256")}
    scale, count = launches[0]["cells"].split(",")[3:]
    assert (scale, count) == ("00002040", "03040000")    # 2.5f and 1027, at their widths


def test_pipeline_dry_run(ptxas_path, tmp_path, monkeypatch):
    monkeypatch.setenv("METTLE_PTXAS", ptxas_path)
    proc = run_tool("variant_pipeline.py", "--dry-run", "--workload", WORKLOAD,
                    "--out-dir", tmp_path, *PTX.values())
    assert proc.returncode == 0, proc.stderr
    static = json.loads((tmp_path / "static_selection.json").read_text())
    assert static["performance_claim"] is False and set(static["entries"]) == {"saxpy"}
    assert not (tmp_path / "timings.json").exists()


@pytest.mark.gpu
@pytest.mark.skipif(not has_cuda_driver(), reason="needs libcuda.so.1 and an NVIDIA GPU")
def test_pipeline_on_a_gpu(ptxas_path, tmp_path, monkeypatch):
    pytest.importorskip("jsonschema")
    monkeypatch.setenv("METTLE_PTXAS", ptxas_path)
    proc = run_tool("variant_pipeline.py", "--workload", WORKLOAD, "--rounds", "21",
                    "--out-dir", tmp_path, *PTX.values())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    timings = json.loads((tmp_path / "timings.json").read_text())
    cands = timings["entries"][0]["candidates"]
    assert len({c["outputs_sha256"] for c in cands}) == 1     # variants agree
    assert all(len(c["samples_ns"]) == 21 and min(c["samples_ns"]) > 0 for c in cands)
    assert "performance_claim=false" in proc.stdout
