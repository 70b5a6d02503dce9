"""Mettle sources of tensor kernels, shared by the CPU (tests/tensor) and hardware
(tests/gpu/test_tensor_*.py) suites, plus compile helpers. Kernel arguments follow one
convention: pointers a, b, c, d first, then (matmul) M, N, K, then runtime strides."""
from __future__ import annotations

import os
import tempfile

from bench.tensor_sources import CARRIER, _types, carrier, matmul_source  # noqa: F401
from tests.support.gpu_opt_mode import options
from toolchain.compiler.driver import compile_file

def mma_source(name: str, a: str, b: str, acc: str, res: str, shape: str,
               layouts=("row", "row", "row", "row"), transpose=(False, False),
               lds: dict | None = None, runtime_ld: bool = False, extra: str = "",
               more_params: tuple[str, ...] = ()) -> str:
    """One tensor_mma kernel. `lds` gives static leading dimensions; with runtime_ld they
    become uint32 parameters lda..ldd instead (same names). `more_params` (e.g.
    "meta: uint8*") follow a, b, c, d and come before the runtime strides."""
    params = [f"a: {carrier(a)}*", f"b: {carrier(b)}*", f"c: {carrier(acc)}*",
              f"d: {carrier(res)}*", *more_params]
    opts = [f"shape: {shape}", _types(a, b, acc, res)]
    opts += [f"{w}_layout: {l}" for w, l in zip("abcd", layouts)]
    opts += [f"transpose_{w}: true" for w, t in zip("ab", transpose) if t]
    for k, v in (lds or {}).items():
        if runtime_ld:
            params.append(f"{k}: uint32")
            opts.append(f"{k}: {k}")
        else:
            opts.append(f"{k}: {v}")
    if extra:
        opts.append(extra)
    return (f"kernel {name}({', '.join(params)}) {{\n  tensor_mma(a, b, c, d, "
            + ",\n    ".join(opts) + ");\n}\n")


def epilogue_source(name: str, fmt: str, shape: str, layout="row", bias_mode="none",
                    bias_layout="row", activation="identity", alpha=True, beta=True,
                    runtime_ld=False, ld=None, ldbias=None, scope="subgroup") -> str:
    ct = "float64" if fmt == "f64" else "float32"
    params = [f"d: {carrier(fmt)}*"]
    opts = [f"shape: {shape}", f"element_type: {fmt}", f"layout: {layout}",
            f"scope: {scope}"]
    if bias_mode != "none":
        params.append(f"bias: {carrier(fmt)}*")
        opts += [f"bias_mode: {bias_mode}", "bias: bias"]
        if bias_mode == "matrix":               # only a matrix bias has a layout and ld
            opts.append(f"bias_layout: {bias_layout}")
    for s, on in (("alpha", alpha), ("beta", beta and bias_mode != "none")):
        if on:
            params.append(f"{s}: {ct}")
            opts.append(f"{s}: {s}")
    if activation == "clamp":
        params += [f"lo: {ct}", f"hi: {ct}"]
        opts += ["clamp_min: lo", "clamp_max: hi"]
    opts.append(f"activation: {activation}")
    for key, v in (("ldd", ld), ("ldbias", ldbias if bias_mode == "matrix" else None)):
        if v is not None:
            if runtime_ld:
                params.append(f"{key}: uint32")
                opts.append(f"{key}: {key}")
            else:
                opts.append(f"{key}: {v}")
    return (f"kernel {name}({', '.join(params)}) {{\n  tensor_epilogue(d, "
            + ",\n    ".join(opts) + ");\n}\n")


def compile_ptx(source: str, arch: str, ptx_version: str | None = None, **opts) -> str:
    """Compile Mettle source text to PTX for `arch` (raises CompileError); `opts`: more
    driver Options fields (tile_mma=False forces the tile matmul replay)."""
    return _compile(source, arch, ptx_version, opts).data.decode()


def compile_ptx_objects(source: str, arch: str, ptx_version: str | None = None, **opts):
    """The same compile's PTX instruction objects (ptx.instr.PtxModule), for ptx_sim."""
    return _compile(source, arch, ptx_version, opts).objects


def _compile(source: str, arch: str, ptx_version: str | None, opts: dict):
    with tempfile.TemporaryDirectory(prefix="mettle-tensor-") as tmp:
        path = os.path.join(tmp, "kernel.mettle")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        return compile_file(path, options(emit="ptx", gpu_arch=arch, ptx_version=ptx_version,
                                          **opts), source_text=source)
