"""Python values -> kernel scalar parameters: the exact type, with range checks. Shared by
the CUDA and OpenCL launch paths. A converter raises `Bad`; the launch turns it into a
TypeError or ValueError naming the kernel and the parameter."""
from __future__ import annotations

import math
import operator

from .signature import SCALARS, Param

FLOAT32_MAX = 3.4028234663852886e38


class Bad(Exception):
    """A converter's complaint; the plan turns it into TypeError/ValueError with names."""

    def __init__(self, error: type, message: str):
        self.error, self.message = error, message


def _int_converter(lo: int, hi: int, type_name: str):
    def convert(value):
        if type(value) is not int:
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise Bad(TypeError, f"expected an integer, got {type(value).__name__}")
            value = operator.index(value)
        if value < lo or value > hi:
            raise Bad(ValueError, f"{value} is out of range for {type_name} ({lo}..{hi})")
        return value
    return convert


def _float_converter(single: bool):
    def convert(value):
        if type(value) is not float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) and \
                    not hasattr(value, "__float__"):
                raise Bad(TypeError, f"expected a number, got {type(value).__name__}")
            value = float(value)
        if single and abs(value) > FLOAT32_MAX and math.isfinite(value):
            raise Bad(ValueError, f"{value} is out of range for float32")
        return value
    return convert


def _bool_converter(value):
    cls = type(value)
    if cls is bool or cls.__module__ == "numpy" and cls.__name__ in ("bool", "bool_"):
        return bool(value)
    raise Bad(TypeError, f"expected a bool, got {type(value).__name__}")


def scalar_converter(param: Param):
    """Python value -> the cell value of a scalar parameter (exact type, range checked)."""
    if param.type == "bool":
        return _bool_converter
    if param.type.startswith("float"):
        return _float_converter(param.type == "float32")
    lo, hi = SCALARS[param.type][2]
    return _int_converter(lo, hi, param.type)


def argument_error(sig, index: int, bad: Bad) -> Exception:
    """The TypeError/ValueError for argument `index` of kernel `sig`."""
    p = sig.params[index]
    return bad.error(f"kernel {sig.name}: parameter {index} `{p.name}` ({p.type}): "
                     f"{bad.message}")


def count_error(sig, given: int) -> TypeError:
    count = len(sig.params)
    return TypeError(f"kernel {sig.name} takes {count} argument{'s' if count != 1 else ''} "
                     f"({', '.join(p.name for p in sig.params)}), got {given}")
