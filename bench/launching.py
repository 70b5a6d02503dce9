"""How the GPU benchmark scripts compile and launch: through the Python runtime (`mettle`).

Scripts that compile with the compiler's module state patched in process (plain_kernels.py's
pass A/Bs, policy_variants.py's load-ahead factors) or that edit the PTX text afterwards
compile through the driver here, never through mettle's cache (whose key cannot see a
patched module), and keep the compile's kernel signature, so every launch is still typed
and checked. Arrays are torch tensors; launches go on torch's current stream.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import mettle  # noqa: E402
from toolchain.compiler.driver import Options, compile_file  # noqa: E402


def local_arch() -> str:
    """The --gpu-arch of CUDA device 0 (sm_90a on an H200)."""
    major, minor = mettle.device(0).compute_capability
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


def compile_module(source: str, arch: str, text: str | None = None, **options) -> mettle.Module:
    """Compile `source` (a path; `text`: its contents when they are not on disk) to PTX now,
    uncached, with driver Options fields as keywords (optimize=True, fp_contract=False...)."""
    result = compile_file(source, Options(emit="ptx", gpu_arch=arch, **options),
                          source_text=text)
    return mettle.Module("ptx", result.data, mettle.Signature.from_json(result.signature),
                         origin=source)


def with_ptx(module: mettle.Module, ptx: str, label: str) -> mettle.Module:
    """An edited copy of `module`'s PTX with the same kernels and signatures."""
    return mettle.Module("ptx", ptx.encode(), module.signature, origin=label)
