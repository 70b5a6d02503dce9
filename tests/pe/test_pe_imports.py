"""The built-in import tables name only functions the real DLLs export: checked against the
export tables of Wine's ucrtbase.dll and kernel32.dll (PE files shipped by Debian's wine64),
read both with pefile and with our own pe_reader."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.linker.pe_imports import BUILTIN
from toolchain.linker.pe_reader import dll_exports
import toolchain.compiler.targets.arm64  # noqa: F401  (compiles host code: the backends,
import toolchain.compiler.targets.x86_64  # noqa: F401  which the registry loads by name)
import toolchain.compiler.targets.x86_64.target_win64  # noqa: F401

pefile = pytest.importorskip("pefile", reason="pefile (pip install pefile) is missing")
WINE_DLLS = Path("/usr/lib/x86_64-linux-gnu/wine/x86_64-windows")


@pytest.mark.parametrize("dll", sorted(BUILTIN))
def test_every_builtin_import_is_exported(dll):
    path = WINE_DLLS / dll
    if not path.exists():
        pytest.skip(f"{path} is missing (Debian's wine64)")
    pe = pefile.PE(str(path), fast_load=False)
    exported = {e.name.decode() for e in pe.DIRECTORY_ENTRY_EXPORT.symbols if e.name}
    assert BUILTIN[dll] <= exported, sorted(BUILTIN[dll] - exported)
    assert dll_exports(path.read_bytes(), str(path)) == exported
