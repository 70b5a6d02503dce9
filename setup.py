"""Packaging: metadata lives in pyproject.toml; this maps the repository onto one package.

`pip install .` installs exactly one top-level name, `mettle` (tests/setup checks it): the
directory toolchain/ becomes the package `mettle` (mettle.compiler, mettle.linker,
mettle.providers, mettle.runtime; every import inside it is relative, and the targets
registry names its backends relative to itself), and the standard library std/*.mettle
becomes package data at mettle/std, where frontend/modules.py looks when there is no
repository std/ beside the package. toolchain/rules (the Pants plugin) is not installed.
In a checkout, the mettle/ directory at the root makes `import mettle` name the same
modules as `import toolchain` (mettle/__init__.py).
"""
from setuptools import find_packages, setup

setup(
    packages=["mettle"] + [f"mettle.{p}" for p in find_packages(
        where="toolchain", exclude=["rules", "rules.*"])] + ["mettle.std"],
    package_dir={"mettle": "toolchain", "mettle.std": "std"},
    package_data={"mettle.std": ["*.mettle"]},
)
