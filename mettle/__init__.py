"""`import mettle` in a checkout: the same modules as `import toolchain`.

`pip install .` installs the directory toolchain/ as the package `mettle` (setup.py). In a
checkout that directory keeps its repository name, so this module makes `mettle` and every
`mettle.X` an alias of `toolchain` and `toolchain.X`: one module object under both names
(no second copy of a class, so `except mettle.LaunchError` catches what toolchain raises).
It replaces itself in sys.modules with the toolchain package and installs a finder that
answers `mettle.X` imports with the already imported (or newly imported) `toolchain.X`.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_PREFIX = __name__ + "."
_TARGET = "toolchain"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        pass  # the target module ran when it was imported

    # `python -m mettle.compiler` (runpy) runs the target's code as __main__:
    def is_package(self, fullname) -> bool:
        return importlib.util.find_spec(self.target).submodule_search_locations is not None

    def get_code(self, fullname):
        return importlib.util.find_spec(self.target).loader.get_code(self.target)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        real = _TARGET + fullname[len(__name__):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real))


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
sys.modules[__name__] = importlib.import_module(_TARGET)
