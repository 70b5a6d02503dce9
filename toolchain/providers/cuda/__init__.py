"""CUDA runtime provider: the Driver API binding (`driver`) and launch marshalling (`launch`).

Importing this package loads no CUDA library; see `driver` for the lazy-load rule.
"""
