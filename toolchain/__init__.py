"""Mettle: the compiler toolchain and its Python runtime (`import mettle`).

The public API is the runtime's (docs/reference/python.md): compile, load, launch, device
arrays, streams, events, bench. Names are imported on first use (PEP 562), so the `mettle`
command, which imports this package first, pays nothing for the runtime.
"""
from __future__ import annotations

__version__ = "0.1.0"

_RUNTIME = {
    "compile": "compiler", "load": "compiler", "Module": "module", "Kernel": "module",
    "CompileError": "compiler", "cache_dir": "cache", "clear_cache": "cache",
    "Signature": "signature", "KernelSignature": "signature", "Param": "signature",
    "LaunchError": "errors", "to_device": "cuda", "empty": "cuda", "zeros": "cuda",
    "DeviceArray": "cuda", "Stream": "cuda", "Event": "cuda", "device": "cuda",
    "synchronize": "cuda", "bench": "bench",
}
__all__ = sorted(_RUNTIME) + ["__version__"]


def __getattr__(name: str):
    module = _RUNTIME.get(name)
    if module is None:
        raise AttributeError(f"module 'mettle' has no attribute {name!r}")
    from importlib import import_module
    value = getattr(import_module(f".runtime.{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
