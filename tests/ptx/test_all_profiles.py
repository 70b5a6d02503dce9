"""Every kernel of the repository on every PTX profile, with and without -O.

Each source of tests/support/kernel_sources.py (the `.mettle` files of tests, bench,
examples, app and std, the kernels written as strings in tests and bench, and those the
tensor test helpers generate) is compiled for each profile below, with -O and without it.
Every module that compiles must assemble with ptxas for that profile's target; a profile
that cannot take a kernel must refuse it with the capability diagnostic E0504 (naming the
ISA and target it needs), never with bad PTX or another error. A source that every profile
refuses alike (a host program, a test's deliberately wrong kernel) is a rejected source,
not a kernel: its verdict must not depend on the profile. SPIR-V is compiled both ways too
and every module validates with spirv-val (OpenCL 2.0; SPIR-V 1.0 for a module with
64-bit atomics, which OpenCL 2.0 refuses without its extension). The refusals accepted are listed at the end of
the run (tests/ptx/conftest.py prints them).

ptxas runs on two threads, and its verdicts are cached in pytest's cache by the hash of
the module and the target (a re-run assembles only what changed).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import spirv
from tests.support.kernel_sources import generated_sources, kernel_sources
from toolchain.compiler import targets as T
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.driver import Options, compile_file

PROFILES = ("portable", "compute_75", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a",
            "sm_120a", "gb10")
CAPABILITY = "E0504"
SOURCES = kernel_sources() + generated_sources()
REFUSED: list[str] = []          # "source: profile(s): message", reported at the end
REJECTED: list[str] = []         # sources every profile refuses alike (not kernels)
ASSEMBLED: list[int] = []        # modules ptxas took, per source


def _compile(path: str, text: str | None, **kw):
    """("ok", bytes) or ("error", codes, first message)."""
    try:
        return ("ok", compile_file(path, Options(**kw), source_text=text).data)
    except CompileError as e:
        return ("error", tuple(sorted({d.code for d in e.diagnostics})),
                e.diagnostics[0].message)


def _ptxas_verdict(exe: str, ptx: bytes, arch: str, cache) -> str:
    """"" when ptxas takes the module, else its message (cached by content)."""
    key = "mettle/ptxas/" + hashlib.sha256(arch.encode() + b"\0" + ptx).hexdigest()
    if cache is not None:
        got = cache.get(key, None)
        if got is not None:
            return got
    with tempfile.TemporaryDirectory(prefix="mettle-allprof-") as tmp:
        src = os.path.join(tmp, "m.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        proc = subprocess.run([exe, f"--gpu-name={arch}", src, "-o", os.path.join(tmp, "m.o")],
                              capture_output=True, text=True, timeout=300)
    verdict = "" if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()[:2000]
    if cache is not None:
        cache.set(key, verdict)
    return verdict


def summary() -> list[str]:
    """What the run accepted, for tests/ptx/conftest.py's end-of-run report."""
    if not ASSEMBLED and not REJECTED:
        return []
    return [f"test_all_profiles: {sum(ASSEMBLED)} modules of {len(ASSEMBLED)} kernel sources "
            f"assembled; {len(REJECTED)} sources refused alike by every profile (not "
            f"kernels); {len(REFUSED)} capability refusal(s) accepted"
            + (":" if REFUSED else "")] + ["  " + line for line in REFUSED]


@pytest.mark.parametrize("name, path, text", SOURCES, ids=[s[0] for s in SOURCES])
def test_every_profile_assembles_or_refuses(name, path, text, ptxas_path, request):
    got = {(arch, opt): _compile(path, text, emit="ptx", gpu_arch=arch, optimize=opt)
           for arch in PROFILES for opt in (False, True)}
    errors = {k: v for k, v in got.items() if v[0] == "error"}
    if len(errors) == len(got):
        verdicts = {v[1:] for v in errors.values()}
        assert len(verdicts) == 1, f"{name}: refused differently by different profiles: " \
            f"{sorted(verdicts)}"
        REJECTED.append(name)
        return                                  # rejected alike everywhere: not a kernel
    wrong = {f"{a}{' -O' if o else ''}": v[1:] for (a, o), v in errors.items()
             if v[1] != (CAPABILITY,)}
    assert not wrong, f"{name}: refused without a capability diagnostic: {wrong}"
    for (arch, opt), v in sorted(errors.items()):
        line = f"{name}: {arch}{' -O' if opt else ''}: {v[2]}"
        REFUSED.append(line)
        request.node.user_properties.append(("refused", line))
    cache = getattr(request.config, "cache", None)
    jobs = [(arch, opt, T.resolve_target("ptx", arch).ptxas_arch, v[1])
            for (arch, opt), v in got.items() if v[0] == "ok"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = list(pool.map(lambda j: _ptxas_verdict(ptxas_path, j[3], j[2], cache), jobs))
    bad = [f"{a}{' -O' if o else ''} ({ptxas_arch}): {v}"
           for (a, o, ptxas_arch, _), v in zip(jobs, verdicts) if v]
    assert not bad, f"{name}: ptxas rejected:\n" + "\n".join(bad)
    ASSEMBLED.append(len(jobs))
    for opt in (False, True):
        r = _compile(path, text, emit="spirv", optimize=opt)
        if r[0] == "ok":
            _validate_spirv(r[1])


def _validate_spirv(binary: bytes) -> None:
    """spirv-val under OpenCL 2.0; a module with 64-bit atomics (Int64Atomics, which the
    OpenCL 2.0 environment refuses without the extension) under SPIR-V 1.0, as
    tests/spirv_emit does."""
    proc = spirv.run_tool("spirv-val", binary, "--target-env", "opencl2.0")
    if proc.returncode != 0 and "Int64Atomics" in proc.stdout + proc.stderr:
        spirv.validate(binary, "spv1.0")
    elif proc.returncode != 0:
        pytest.fail(f"spirv-val rejected the module:\n{proc.stdout}{proc.stderr}")
