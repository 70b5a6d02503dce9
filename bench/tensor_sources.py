"""Mettle sources of tensor_matmul kernels, shared by the tensor suites (tests/tensor,
tests/gpu/test_tensor*.py, through tests/tensor/kernels.py) and bench/gemm.py (which may not
import the test suite). Kernel arguments: pointers a, b, c, d, then M, N, K, then runtime
strides."""
from __future__ import annotations

CARRIER = {"f16": "uint16", "bf16": "uint16", "f32": "float32", "tf32": "float32",
           "f64": "float64", "i8": "int8", "i32": "int32"}


def carrier(fmt: str) -> str:
    return CARRIER.get(fmt, "uint8")


def _types(a, b, acc, res) -> str:
    return f"a_type: {a}, b_type: {b}, accumulator_type: {acc}, result_type: {res}"


def matmul_source(name: str, a: str, b: str, acc: str, res: str, shape: str,
                  layouts=("row", "row", "row", "row"), transpose=(False, False),
                  warps: int = 1, extra: str = "", more_params: tuple[str, ...] = ()) -> str:
    """tensor_matmul with one region per warp; `warps` warps per block take consecutive
    regions along N. Runtime lda..ldd; `more_params` follow them."""
    m, n = (int(x) for x in shape[1:].split("k")[0].split("n"))
    params = [f"a: {carrier(a)}*", f"b: {carrier(b)}*", f"c: {carrier(acc)}*",
              f"d: {carrier(res)}*", "pm: uint32", "pn: uint32", "pk: uint32",
              "lda: uint32", "ldb: uint32", "ldc: uint32", "ldd: uint32", *more_params]
    opts = [f"shape: {shape}", _types(a, b, acc, res),
            *(f"{w}_layout: {l}" for w, l in zip("abcd", layouts)),
            *(f"transpose_{w}: true" for w, t in zip("ab", transpose) if t),
            "lda: lda, ldb: ldb, ldc: ldc, ldd: ldd"] + ([extra] if extra else [])
    return (f"kernel {name}({', '.join(params)}) {{\n"
            f"  var w: uint32 = thread.x / 32;\n"
            f"  var row: uint32 = block.y * {m};\n"
            f"  var column: uint32 = (block.x * {warps} + w) * {n};\n"
            f"  tensor_matmul(a, b, c, d, row, column, pm, pn, pk,\n    "
            + ",\n    ".join(opts) + ");\n}\n")
