"""Unit checks of the plugin's pure helpers (field validation, variant parsing, the
selection rule, PTX target detection), run inside Pants' own interpreter, where the plugin
and `pants` import (the suite's CPython 3.11 has no `pants`)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.rules.pants_harness import has_bootstrapped_pants, source_root

ROOT = source_root()
PANTS_PY = ROOT / ".bootstrap" / "pants-2.17.1" / "bin" / "python"
pytestmark = pytest.mark.skipif(not has_bootstrapped_pants(ROOT),
                                reason="Pants is not bootstrapped (run ./pants once)")

PROBE = r'''
import json, sys
from pants.engine.addresses import Address
from toolchain.rules import target_types as tt
from toolchain.rules.compile_kernel import (CompileKernelRequest, compile_argv,
                                            print_target_argv, ptxas_arch_of)
from toolchain.rules.variants import candidate_name, winner
addr = Address("pkg", target_name="t")
def err(fn, *a):
    try:
        fn(*a)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None
out = {
  "variant": tt.parse_variant(sys.argv[1]),
  "bad_variant": err(tt.parse_variant, sys.argv[2]),
  "arch_ok": tt.MettleGpuArchField.compute_value(sys.argv[3], addr),
  "arch_bad": err(tt.MettleGpuArchField.compute_value, sys.argv[4], addr),
  "budget_bad": err(tt.MettleTensorTupleBudgetField.compute_value, 5000, addr),
  "one_variant": err(tt.VariantsField.compute_value, ["optimize=true"], addr),
  "argv": list(print_target_argv("sm_90a", "8.4")),
  "ptxas": [ptxas_arch_of(t.encode()) for t in json.loads(sys.argv[5])],
  "name": candidate_name(3, sys.argv[1]),
  "winner": winner({"entries": {"a": {"selection": "v1"}, "b": {"selection": "v1"}}}, "x"),
  "consts": tt.MettleConstsField.compute_value(["HEAD_DIM=128", "ELEM=bf16"], addr),
  "consts_bad": err(tt.MettleConstsField.compute_value, ["HEAD_DIM"], addr),
  "consts_argv": list(compile_argv(CompileKernelRequest(
      addr, None, "k.ptx", "ptx", "sm_90a", False, None, None, True, "opencl2.0",
      consts=("HEAD_DIM=128", "ELEM=bf16")), "k.mettle", "std"))[-4:],
  "split": err(winner, {"entries": {"a": {"selection": "v0", "reason": "r0"},
                                    "b": {"selection": None, "reason": "tie"}}}, "pkg:t"),
}
print(json.dumps(out))
'''


def probe(*args: str) -> dict:
    proc = subprocess.run([str(PANTS_PY), "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def print_target(arch: str) -> str:
    """The compiler's --print-target output, as the compile rule's process gets it."""
    proc = subprocess.run([sys.executable, "-m", "toolchain.compiler", "--print-target",
                           "--gpu-arch", arch], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_plugin_helpers():
    targets = json.dumps([print_target(a) for a in ("sm_90a", "compute_75", "sm_52")])
    out = probe("tensor_tuple_budget=8,gpu_arch=sm_121a", "tensor_tuple_budget=many",
                "gb10", "sm90", targets)
    assert out["variant"] == [["gpu_arch", "sm_121a"], ["tensor_tuple_budget", "8"]]
    assert "is not an integer in 0..4096" in out["bad_variant"]
    assert out["arch_ok"] == "gb10"
    assert out["arch_bad"].startswith("InvalidFieldException: The `gpu_arch` field of the "
                                      "target pkg:t is 'sm90'")
    assert "expected 0..4096" in out["budget_bad"]
    assert "needs at least two variants" in out["one_variant"]
    assert out["ptxas"] == ["sm_90a", "sm_75", None]       # sm_52: ptxas 13 refuses it
    assert out["argv"] == ["--print-target", "--gpu-arch", "sm_90a", "--ptx-version", "8.4"]
    assert out["name"] == "v3_tensor_tuple_budget-8-gpu_arch-sm_121a"
    assert out["winner"] == "v1"
    assert "a: v0 (r0); b: none (tie)" in out["split"]
    assert out["consts"] == ["HEAD_DIM=128", "ELEM=bf16"]
    assert "has 'HEAD_DIM'; expected NAME=VALUE" in out["consts_bad"]
    assert out["consts_argv"] == ["--const", "HEAD_DIM=128", "--const", "ELEM=bf16"]


RESOLVE_PROBE = r'''
import json
from pants.engine.addresses import Address
from pants.util.frozendict import FrozenDict
from toolchain.rules.dependency_inference import (MettleImport, MettleSourceMapping,
                                                  ancestor_deps_files, resolve_import)
a, b, c = (Address("std", relative_file_path=f, target_name="mettle")
           for f in ("io.linux.mettle", "io.mettle", "x.mettle"))
mapping = MettleSourceMapping(FrozenDict({"std/io.linux.mettle": a, "std/io.mettle": b}),
                              FrozenDict({"std/x.mettle": (c, c)}))
importer = Address("app", target_name="host")
def imp(spec, **cands):
    return MettleImport(spec, "app/h.mettle:3:1", tuple(sorted(
        (k, tuple(v)) for k, v in cands.items())))
present = frozenset({"std/io.linux.mettle", "std/io.mettle", "std/x.mettle", "app/loose.mettle"})
std_io = imp("std/io", linux=["std/io.linux.mettle", "std/io.mettle"],
             windows=["std/io.windows.mettle", "std/io.mettle"])
def show(r):
    return [[str(x) for x in r[0]], r[1]]
print(json.dumps({
  "std_io": show(resolve_import(std_io, present, mapping, importer)),
  "missing": show(resolve_import(imp("nope", linux=["app/nope.mettle", "nope.mettle"],
                                     windows=["app/nope.mettle", "nope.mettle"]),
                                 present, mapping, importer)),
  "win_only_missing": show(resolve_import(imp("w", windows=["app/w.mettle"], linux=["std/io.mettle"]),
                                          present, mapping, importer)),
  "missing_ok": show(resolve_import(imp("nope", linux=["app/nope.mettle"]), present, mapping,
                                    importer, missing_ok=True)),
  "unowned": show(resolve_import(imp("loose", linux=["app/loose.mettle"]), present, mapping,
                                 importer)),
  "unowned_ok": show(resolve_import(imp("loose", linux=["app/loose.mettle"]), present,
                                    mapping, importer, missing_ok=True)),
  "ambiguous": show(resolve_import(imp("x", linux=["std/x.mettle"]), present, mapping,
                                   importer)),
  "deps_files": ancestor_deps_files("a/b/c.mettle"),
}))
'''


def test_import_resolution_follows_the_compiler_candidates():
    proc = subprocess.run([str(PANTS_PY), "-c", RESOLVE_PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # Linux loads io.linux.mettle, Windows io.mettle: both are dependencies, in OS order.
    assert out["std_io"] == [["std/io.linux.mettle:mettle", "std/io.mettle:mettle"], []]
    assert out["missing"][0] == [] and out["missing"][1] == [
        'app/h.mettle:3:1: import "nope" (of app:host): cannot find the module; the '
        "compiler looks for app/nope.mettle, nope.mettle."]
    assert out["win_only_missing"][1][0].endswith("cannot find the module on windows; the "
                                                  "compiler looks for app/w.mettle.")
    # A skip_check source (meant not to compile) may import what exists nowhere...
    assert out["missing_ok"] == [[], []]
    assert "which no mettle_source target owns; run `./pants tailor ::`" in \
        out["unowned"][1][0]
    # ... but a file that exists and no target owns is a BUILD problem all the same.
    assert out["unowned_ok"] == out["unowned"]
    assert "several mettle_source targets own" in out["ambiguous"][1][0]
    assert out["deps_files"] == ["a/b/mettle.deps", "a/mettle.deps", "mettle.deps"]
