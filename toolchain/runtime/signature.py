"""Kernel signatures on the runtime side: the typed parameters of every kernel of a module,
read from the compiler's signature document (toolchain/compiler/signature.py), and the
facts about each parameter type that launches check against.
"""
from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass

FORMAT = "mettle.signature/1"

# scalar type -> (ctypes cell, NumPy dtype name, (min, max) for integers)
SCALARS: dict[str, tuple[type, str, tuple[int, int] | None]] = {
    "bool": (ctypes.c_bool, "bool", None),
    "float32": (ctypes.c_float, "float32", None),
    "float64": (ctypes.c_double, "float64", None),
}
for _bits, _ctypes in ((8, ctypes.c_int8), (16, ctypes.c_int16), (32, ctypes.c_int32),
                       (64, ctypes.c_int64)):
    SCALARS[f"int{_bits}"] = (_ctypes, f"int{_bits}", (-(1 << (_bits - 1)),
                                                       (1 << (_bits - 1)) - 1))
for _bits, _ctypes in ((8, ctypes.c_uint8), (16, ctypes.c_uint16), (32, ctypes.c_uint32),
                       (64, ctypes.c_uint64)):
    SCALARS[f"uint{_bits}"] = (_ctypes, f"uint{_bits}", (0, (1 << _bits) - 1))


HALF_CARRIERS = frozenset(("uint16", "float16", "bfloat16"))


@dataclass(frozen=True)
class Param:
    """One kernel parameter: `kind` is "scalar", "pointer" or "aggregate"."""
    name: str
    type: str            # Mettle spelling: int32, float32*, struct Pair
    kind: str
    size: int            # bytes of the parameter itself (8 for a pointer)
    element: str | None = None   # pointers: the pointee's type name
    space: str | None = None     # pointers: global, generic...

    @property
    def dtype(self) -> str | None:
        """The NumPy dtype name an array needs to be passed here (None: any dtype)."""
        if self.kind == "pointer":
            entry = SCALARS.get(self.element or "")
            return entry[1] if entry else None
        return None

    @property
    def dtypes(self) -> frozenset[str] | None:
        """Every array dtype this pointer takes: its element's, and for uint16* also
        float16 and bfloat16 (the language stores halves in uint16 carriers)."""
        want = self.dtype
        if want is None:
            return None
        return HALF_CARRIERS if want == "uint16" else frozenset((want,))


@dataclass(frozen=True)
class KernelSignature:
    name: str
    symbol: str          # the entry's name in the PTX / SPIR-V module
    params: tuple[Param, ...]
    block: tuple[int, int, int] | None = None   # kernel(block = ...) fixes the block shape
    shared_bytes: int = 0    # dynamic workgroup memory every launch needs (its tiles)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{p.name}: {p.type}' for p in self.params)})"


@dataclass(frozen=True)
class Signature:
    target: str          # "ptx" | "spirv"
    kernels: dict[str, KernelSignature]

    @classmethod
    def from_json(cls, doc: dict, origin: str = "signature") -> "Signature":
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"{origin}: not a {FORMAT} document")
        kernels = {}
        for k in doc["kernels"]:
            params = tuple(Param(p["name"], p["type"], p["kind"], int(p["size"]),
                                 p.get("element"), p.get("space")) for p in k["params"])
            block = tuple(k["block"]) if k.get("block") else None
            kernels[k["name"]] = KernelSignature(k["name"], k.get("symbol") or k["name"],
                                                 params, block,
                                                 int(k.get("shared_bytes", 0)))
        return cls(doc["target"], kernels)

    @classmethod
    def of(cls, kernel: str, params, target: str = "ptx",
           block: tuple[int, int, int] | None = None) -> "Signature":
        """A one-kernel signature from (name, type) pairs in Mettle spelling ("float32*",
        "int32", "void*": an untyped pointer), for PTX written by hand or by a tool."""
        entries = []
        for name, spelled in params:
            if spelled.endswith("*"):
                element = spelled[:-1]
                if element not in SCALARS and element != "void":
                    raise ValueError(f"{kernel}: parameter {name}: unknown element type "
                                     f"{element!r}")
                entries.append(Param(name, spelled, "pointer", 8, element, "global"))
            elif spelled in SCALARS:
                entries.append(Param(name, spelled, "scalar",
                                     ctypes.sizeof(SCALARS[spelled][0])))
            else:
                raise ValueError(f"{kernel}: parameter {name}: unknown type {spelled!r}")
        return cls(target, {kernel: KernelSignature(kernel, kernel, tuple(entries), block)})

    def to_json(self) -> dict:
        """The mettle.signature/1 document (what --emit-signature writes)."""
        def param(p: Param) -> dict:
            entry = {"name": p.name, "type": p.type, "kind": p.kind, "size": p.size}
            if p.kind == "pointer":
                entry.update(element=p.element, space=p.space)
            return entry
        def kernel(k: KernelSignature) -> dict:
            entry = {"name": k.name, "symbol": k.symbol,
                     "block": list(k.block) if k.block else None,
                     "params": [param(p) for p in k.params]}
            if k.shared_bytes:
                entry["shared_bytes"] = k.shared_bytes
            return entry
        return {"format": FORMAT, "target": self.target,
                "kernels": [kernel(k) for k in self.kernels.values()]}

    @classmethod
    def read(cls, path: str) -> "Signature":
        with open(path, encoding="utf-8") as f:
            return cls.from_json(json.load(f), path)
