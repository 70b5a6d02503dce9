"""The on-disk cache of `mettle.compile`: compiled modules keyed by everything that decides
their bytes (Triton's cache is the model).

Key: SHA-256 over the compiler's identity (its version and a digest of its own source files,
so an edited compiler never reuses an old entry), the entry's resolved path and source text,
the target and every compile option. An entry also lists every file the compile read (the
entry and each imported module, transitively, standard library included) with the SHA-256
of its contents; a lookup re-hashes them and misses when any changed (ccache's "direct
mode": a hit never re-parses the program).

Layout: `$METTLE_CACHE_DIR`, else `~/.cache/mettle` (`$XDG_CACHE_HOME/mettle` when set),
holds `<key[:2]>/<key>.json`: one JSON file per entry with the dependency list, the
signature document and the artifact (PTX text, or SPIR-V as hex). It is written to a
temporary file in the same directory and renamed over the entry, so readers see a whole
old entry or a whole new one, never a partial file, and concurrent writers of one key
are safe. A file that does not parse is a miss (and is overwritten).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

ENV_DIR = "METTLE_CACHE_DIR"
FORMAT = "mettle.cache/1"
_TOOLCHAIN = Path(__file__).resolve().parent.parent   # toolchain/ (installed: mettle/)
_IDENTITY: str | None = None


def cache_dir() -> Path:
    """Where compiled modules are cached (the directory need not exist yet)."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mettle"


def clear_cache() -> None:
    """Delete every cached module."""
    shutil.rmtree(cache_dir(), ignore_errors=True)


def compiler_identity() -> str:
    """The version plus a digest of the compiler's and linker's Python sources (once per
    process): any edit of the compiler changes every key."""
    global _IDENTITY
    if _IDENTITY is None:
        from .. import __version__
        h = hashlib.sha256(__version__.encode())
        roots = [_TOOLCHAIN / "compiler", _TOOLCHAIN / "records.py"]
        files = sorted(p for r in roots for p in ([r] if r.is_file() else r.rglob("*.py"))
                       if "__pycache__" not in p.parts)
        for p in files:
            h.update(p.relative_to(_TOOLCHAIN).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
        _IDENTITY = h.hexdigest()
    return _IDENTITY


def key(entry: str, source: bytes, target: str, options: dict) -> str:
    h = hashlib.sha256()
    for part in (FORMAT, compiler_identity(), entry, target,
                 json.dumps(options, sort_keys=True, default=str)):
        h.update(part.encode() + b"\0")
    h.update(hashlib.sha256(source).digest())
    return h.hexdigest()


def file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _path(k: str) -> Path:
    return cache_dir() / k[:2] / f"{k}.json"


def lookup(k: str) -> dict | None:
    """The entry for key `k` when every file it depends on is unchanged, else None."""
    try:
        entry = json.loads(_path(k).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    for path, digest in entry.get("dependencies", []):
        if file_digest(path) != digest:
            return None
    return entry


def store(k: str, dependencies: list[tuple[str, str]], target: str, artifact: bytes,
          signature: dict) -> None:
    """Write the entry for `k` atomically. A cache that cannot be written (read-only home,
    full disk) costs the next compile its time, never this one its result."""
    entry = {"format": FORMAT, "dependencies": [list(d) for d in dependencies],
             "target": target, "signature": signature,
             "artifact": artifact.decode() if target == "ptx" else artifact.hex()}
    path = _path(k)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        from ..compiler.driver import write_atomic
        write_atomic(str(path), json.dumps(entry, sort_keys=True).encode())
    except OSError:
        pass


def artifact_of(entry: dict) -> bytes:
    data = entry["artifact"]
    return data.encode() if entry["target"] == "ptx" else bytes.fromhex(data)
