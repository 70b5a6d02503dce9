"""The attention example (examples/attention) on a CUDA GPU, against torch SDPA computed in
float32, with FlashAttention's tolerance rule:

    out_ref = SDPA(q.float(), k.float(), v.float())      (the math backend, float32)
    out_pt  = SDPA(q, k, v)                               (torch's flash backend, f16/bf16)
    fwd_atol = 2 * max|(out_ref + 0.3 - 0.3) - out_ref|   (out_ref and that arithmetic in
                                                           the 16-bit format: rounding noise)
    pass  <=>  out is finite and max|out - out_ref| <= 2 * max|out_pt - out_ref| + fwd_atol

i.e. our error against the float32 reference is at most twice torch's own 16-bit error
plus the format's rounding noise (FlashAttention's hopper/test_flash_attn.py rule).

Cases (examples/attention/check_attention.py, whose docstring lists them): f16 and bf16,
d 64 and 128, full and causal; random inputs at n = 1, 17, BLOCK_M, BLOCK_M + 1,
3·BLOCK_N - 5 and a ragged multi-block n, and a non-default scale; large logits (|logit|
up to 1e4), equal logits, V near the format's maximum, causal row 0 seeing one key (its
output is v[0]); 200 back-to-back launches (no hang, bitwise repeatable). Every case runs
on inputs and a NaN-poisoned output between NaN guards (unwritten elements, writes past the
output, reads past n). BLOCK_M and BLOCK_N come from the kernel source. Each group of cases
runs in its own process (a faulting kernel poisons its CUDA context), so the test names
the group and the script's output names the case. The compute-sanitizer tests run memcheck
and racecheck on one small causal and one full case, in a process without torch. Every
test runs each form of the tile matmuls: mma.sync, wgmma, and wgmma with Q in workgroup
memory (`--form`, the compile options tile_wgmma and tile_wgmma_a;
docs/internals/tile-wgmma.md), the wgmma ones only on a GPU with wgmma.

    python3 -m pytest tests/gpu/test_attention.py
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "attention" / "check_attention.py"
VARIANTS = [f"{fmt}-d{d}" for fmt in ("f16", "bf16") for d in (64, 128)]
# one process each: the random sweeps per mask, the adversarial values, the launch storm
GROUPS = {"full": ["{v}-full-*"], "causal": ["{v}-causal-*"],
          "values": ["{v}-logits1e4-*", "{v}-equal-*", "{v}-bigv-*", "{v}-onekey-*"],
          "launches200": ["{v}-launches200"]}
TIMEOUT_S = 300
SANITIZER_EXIT = 86
FORMS = ("mma", "wgmma", "wgmma-ss")     # examples/attention/attention.py's FORMS


@cache
def form_reason(form: str) -> str | None:
    """Why `form` cannot run here (wgmma: the local GPU's profile lacks it), or None."""
    if not form.startswith("wgmma"):
        return None
    from toolchain.compiler import targets
    from toolchain.compiler.targets.ptx.profiles import detect_local_arch
    arch = detect_local_arch()
    if arch is None or not targets.resolve_target("ptx", arch).capabilities.wgmma:
        return f"the wgmma form needs a GPU with wgmma (this one: {arch})"
    return None


@cache
def torch_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    return None


def run(command: list[str], timeout: float = TIMEOUT_S) -> tuple[int, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=ROOT, env=env)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout
        pytest.fail(f"no result within {timeout} s (a hang?): {' '.join(command)}\n{out}")
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_attention_matches_sdpa(variant, group, form):
    reason = torch_reason() or form_reason(form)
    if reason:
        pytest.skip(reason)
    patterns = ",".join(p.format(v=variant) for p in GROUPS[group])
    rc, out = run([sys.executable, str(SCRIPT), "--case", patterns, "--form", form])
    assert rc == 0 and "CHECK OK" in out and "---- " in out, out


def test_every_case_belongs_to_one_group():
    import fnmatch
    rc, out = run([sys.executable, str(SCRIPT), "--list"])
    assert rc == 0, out
    names = out.split()
    for name in names:
        owners = [(v, g) for v in VARIANTS for g, pats in GROUPS.items()
                  if any(fnmatch.fnmatchcase(name, p.format(v=v)) for p in pats)]
        assert len(owners) == 1, (name, owners)
    assert len(names) >= 4 * 20


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
def test_attention_under_compute_sanitizer(tool, mask, form):
    exe = os.environ.get("METTLE_COMPUTE_SANITIZER") or shutil.which("compute-sanitizer")
    if exe is None:
        pytest.skip("compute-sanitizer is not on PATH")
    if form_reason(form):
        pytest.skip(form_reason(form))
    rc, out = run([exe, "--tool", tool, "--error-exitcode", str(SANITIZER_EXIT),
                   sys.executable, str(SCRIPT), "--sanitizer-case", mask, "--form", form],
                  timeout=600)
    if rc != 0 and "Device not supported" in out:     # e.g. under gVisor
        pytest.skip(f"compute-sanitizer cannot run on this device: {out[-400:]}")
    # memcheck: "ERROR SUMMARY: 0 errors"; racecheck: "RACECHECK SUMMARY: 0 hazards ..."
    assert rc == 0 and "CHECK OK" in out and "SUMMARY: 0 " in out \
        and not re.search(r"SUMMARY: [1-9]", out), out
