"""Exceptions of the Python runtime. Argument errors are the built-in TypeError/ValueError
(with the kernel and parameter named); these are the rest."""
from __future__ import annotations

from ..compiler.diagnostics import CompileError as _DiagnosticsError


class CompileError(_DiagnosticsError):
    """`mettle.compile` failed: `.diagnostics` holds them; str() is the rendered report
    (`error[E0101]: ...` with ` --> file:line:col` and the source line), as the CLI prints."""

    def __init__(self, diagnostics, sources=None):
        super().__init__(diagnostics)
        from ..compiler.diagnostics import render_text
        self.report = "\n".join(render_text(d, sources) for d in self.diagnostics)

    def __str__(self) -> str:
        return self.report


class LaunchError(RuntimeError):
    """The driver refused a launch (or a call made for it); names the kernel. `.cause` is the
    driver's error (toolchain.providers.cuda.driver.CudaError or an OpenCL error)."""

    def __init__(self, kernel: str, message: str, cause: Exception | None = None):
        self.kernel, self.cause = kernel, cause
        super().__init__(f"kernel {kernel}: {message}")
