"""`mettle.compile` and `mettle.load`: a Module from Mettle source (compiled in this process,
through the compiler driver, with the on-disk cache of cache.py) or from a packaged artifact.
"""
from __future__ import annotations

import os

from ..compiler import driver as compiler_driver
from ..compiler.diagnostics import CompileError as _DiagnosticsError, SourceMap
from . import cache
from .errors import CompileError
from .module import Module
from .signature import Signature

TARGETS = {"ptx": "ptx", "spirv": "spirv"}
SIGNATURE_SUFFIX = ".sig.json"   # beside the artifact: kernels.ptx -> kernels.ptx.sig.json
SOURCE_NAME = "<source>.mettle"  # the display name of a compile from source text
# compile(**options) -> driver.Options field
OPTIONS = {"ptx_version": "ptx_version", "fp_contract": "fp_contract",
           "gpu_checks": "gpu_checks", "tensor_tuple_budget": "tensor_tuple_budget",
           "wmma_staging": "wmma_staging", "include_dirs": "include_dirs",
           "stdlib_dir": "stdlib_dir", "release": "release", "consts": "consts",
           "tile_mma": "tile_mma", "tile_wgmma": "tile_wgmma", "tile_wgmma_a": "tile_wgmma_a",
           "tile_rescale_skip": "tile_rescale_skip", "tile_copy_wait": "tile_copy_wait"}


def _is_path(value) -> bool:
    if isinstance(value, os.PathLike):
        return True
    if not isinstance(value, str):
        raise TypeError(f"compile: expected a path or Mettle source text, got "
                        f"{type(value).__name__}")
    return "\n" not in value and (value.endswith(".mettle") or os.path.isfile(value))


def default_arch() -> str | None:
    """The arch of CUDA device 0 when one is usable (sm_90a on an H200), else None (the
    compiler's default)."""
    from ..providers.cuda import driver
    if driver.probe() is not None:
        return None
    from .cuda import device
    major, minor = device(0).compute_capability
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


def _options(target: str, arch, opt: bool, options: dict) -> compiler_driver.Options:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"compile: unknown option {', '.join(unknown)} (options: "
                        f"{', '.join(sorted(OPTIONS))})")
    if options.get("tile_wgmma_a", "shared") not in ("registers", "shared"):
        raise ValueError(f"compile: tile_wgmma_a must be 'registers' or 'shared', got "
                         f"{options['tile_wgmma_a']!r}")
    if options.get("tile_copy_wait", "load") not in ("load", "matmul"):
        raise ValueError(f"compile: tile_copy_wait must be 'load' or 'matmul', got "
                         f"{options['tile_copy_wait']!r}")
    fields = {OPTIONS[k]: (list(v) if k == "include_dirs" else v) for k, v in options.items()}
    if "consts" in fields:          # {"HEAD_DIM": 128, "ELEM": "bf16"}: --const NAME=VALUE
        fields["consts"] = tuple(sorted((str(n), str(v)) for n, v in fields["consts"].items()))
    return compiler_driver.Options(emit=target, optimize=bool(opt), gpu_arch=arch, **fields)


def _key_options(opts: compiler_driver.Options) -> dict:
    return {"arch": opts.gpu_arch, "optimize": opts.optimize, "release": opts.release,
            **{k: getattr(opts, v) for k, v in OPTIONS.items()}}


def compile(source, arch: str | None = None, opt: bool = True, *, target: str = "ptx",
            cache: bool = True, device: int = 0, **options) -> Module:
    """Compile Mettle source (a path, or the text itself) in this process to a Module.

    `arch`: the --gpu-arch (default: the arch of CUDA device 0 when there is one, else the
    compiler's default); `opt`: -O; `target`: "ptx" (CUDA) or "spirv" (OpenCL); options:
    ptx_version, fp_contract, gpu_checks, tensor_tuple_budget, wmma_staging, include_dirs,
    stdlib_dir, release, consts (a dict NAME -> value, the --const flags), tile_mma
    (False: --gpu-tile-mma=off), tile_wgmma (False: --gpu-tile-wgmma=off), tile_wgmma_a
    ("registers": --gpu-tile-wgmma-a=registers), tile_rescale_skip (False:
    --gpu-tile-rescale-skip=off), tile_copy_wait ("matmul": --gpu-tile-copy-wait=matmul).
    Results are
    cached on disk (cache.py); `cache=False` skips it.
    Raises mettle.CompileError, whose str() is the compiler's located report."""
    if target not in TARGETS:
        raise ValueError(f"compile: target must be 'ptx' or 'spirv', got {target!r}")
    if arch is None and target == "ptx":
        arch = default_arch()
    opts = _options(target, arch, opt, options)
    if _is_path(source):
        path = os.path.abspath(os.fspath(source))
        with open(path, "rb") as f:      # FileNotFoundError names the path
            data = f.read()
        text, display = None, path
    else:
        path = display = SOURCE_NAME
        text = source
        data = source.encode()
    return _compile(path, display, text, data, target, opts, cache, device)


def _compile(path, display, text, data, target, opts, use_cache: bool, device: int) -> Module:
    k = cache.key(path, data, target, _key_options(opts)) if use_cache else None
    if k is not None:
        entry = cache.lookup(k)
        if entry is not None:
            return Module(target, cache.artifact_of(entry), Signature.from_json(
                entry["signature"]), origin=display, device=device, cache_hit=True)
    try:
        deps = [] if text is not None else compiler_driver.dependencies(path, opts)
        digests = [(d, cache.file_digest(d)) for d in deps]
        result = compiler_driver.compile_file(path, opts, source_text=text)
    except _DiagnosticsError as exc:
        raise CompileError(exc.diagnostics, _sources(exc.diagnostics, path, text)) from None
    if k is not None:
        cache.store(k, digests, target, result.data, result.signature)
    return Module(target, result.data, Signature.from_json(result.signature), origin=display,
                  device=device, cache_hit=False if k is not None else None)


def _sources(diagnostics, path: str, text: str | None) -> SourceMap:
    sources = SourceMap()
    for d in diagnostics:
        name = d.span.file if d.span is not None else None
        if name is None or name in sources.files:
            continue
        if name == path and text is not None:
            sources.add(name, text)
            continue
        try:
            with open(name, encoding="utf-8", errors="replace") as f:
                sources.add(name, f.read())
        except OSError:
            pass
    return sources


def load(path, signature=None, device: int = 0) -> Module:
    """A Module from a packaged artifact: `x.ptx` (CUDA) or `x.spv` (OpenCL), with its
    signature sidecar `x.ptx.sig.json` (what `mettle_kernel` and `mettle --emit-signature`
    write), or `signature=` (a path, a Signature or the JSON document)."""
    path = os.fspath(path)
    target = "spirv" if path.endswith(".spv") else "ptx"
    with open(path, "rb") as f:
        artifact = f.read()
    if signature is None:
        sidecar = path + SIGNATURE_SUFFIX
        if not os.path.isfile(sidecar):
            raise FileNotFoundError(f"{path} has no signature sidecar {sidecar}: build it with "
                                    f"mettle_kernel, or `mettle ... --emit-signature {sidecar}`")
        sig = Signature.read(sidecar)
    elif isinstance(signature, Signature):
        sig = signature
    elif isinstance(signature, dict):
        sig = Signature.from_json(signature)
    else:
        sig = Signature.read(os.fspath(signature))
    if sig.target != target:
        raise ValueError(f"{path}: the signature describes a {sig.target} module, not {target}")
    return Module(target, artifact, sig, origin=path, device=device)
