"""Shared plumbing for the GPU variant tools: errors, canonical JSON and hashing.

Invariants: every JSON document these tools write goes through `dump_stable`, so the same
data gives byte-identical files (sorted keys, two-space indent, one trailing newline);
`sha256_file` hashes exact bytes, which is how profiles, inputs and workloads are bound
to measurements. `ToolError` is the only exception a CLI turns into a plain message; any
other exception is an internal error and is reported as such, never as a traceback.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable


class ToolError(Exception):
    """Bad input, a missing tool or a violated gate: printed as `error: <message>`."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def dump_stable(data: Any) -> str:
    """Deterministic JSON text: sorted keys, indent 2, trailing newline."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=True) + "\n"


def canonical_json(data: Any) -> bytes:
    """Compact canonical form used for hashing (not for display)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    return sha256_bytes(read_bytes(path))


def read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


def load_json(path: str | Path, what: str) -> Any:
    """Parse a JSON file, turning I/O and syntax problems into ToolError."""
    text = read_bytes(path)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ToolError(f"{what} {path} is not valid JSON: {exc}") from None


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write through a temporary file so a failed run never leaves a partial output."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ToolError(f"cannot write {path}: {exc.strerror or exc}") from None


def run_cli(main: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run a tool's main, mapping ToolError to `error: ...` and anything else to an
    internal-error line (exit 70), so users never see a Python traceback."""
    try:
        return main(sys.argv[1:] if argv is None else argv)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - last-resort boundary of the CLI
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 70
