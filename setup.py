"""Packaging: metadata lives in pyproject.toml; this only adds the standard library.

The Mettle standard library (std/*.mettle) is installed as package data at toolchain/std,
where frontend/modules.py looks when there is no repository std/ beside the package.
(pyproject's `packages.find` cannot map a data directory into a package.)
"""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["toolchain*"], exclude=["toolchain.rules*"]) +
    ["toolchain.std"],
    package_dir={"toolchain.std": "std"},
    package_data={"toolchain.std": ["*.mettle"]},
)
