"""The typed parameter list of every kernel of a module: what `mettle --emit-signature`
writes beside a PTX or SPIR-V artifact and what the Python runtime (toolchain/runtime)
checks launches against. PTX and SPIR-V keep only widths (.u64, OpTypePointer of i8...),
so a packaged artifact without this sidecar could not tell a float32* from an int64.

Format (JSON, keys sorted, deterministic):
    {"format": "mettle.signature/1", "target": "ptx" | "spirv",
     "kernels": [{"name": "vadd", "symbol": "vadd", "block": [256, 1, 1] | null,
                  "params": [{"name": "a", "type": "float32*", "kind": "pointer",
                              "element": "float32", "space": "global", "size": 8},
                             {"name": "n", "type": "int32", "kind": "scalar", "size": 4}]}]}
A kernel whose tiles live in dynamic workgroup memory (frontend/tile_plan.py: past 48 KiB)
also has "shared_bytes": the dynamic workgroup memory every launch must give it (absent:
none); the kernel traps when a launch gives less.
`kind` is "scalar" (int8..int64, uint8..uint64, float32, float64, bool) or "pointer"
(element: the scalar it points to); kernels take nothing else today (E0302), and any other
type is written as kind "aggregate" with its `type` and `size`, so a reader can refuse it by
name. Kernels are in declaration order.
"""
from __future__ import annotations

FORMAT = "mettle.signature/1"


def type_name(t) -> str:
    """The Mettle spelling of an IR type (int32, float32*, bool, struct Pair...)."""
    from .ir.types import BoolType, FloatType, IntType, PtrType, StructType, VoidType
    if isinstance(t, IntType):
        return f"{'int' if t.signed else 'uint'}{t.bits}"
    if isinstance(t, FloatType):
        return f"float{t.bits}"
    if isinstance(t, BoolType):
        return "bool"
    if isinstance(t, PtrType):
        return type_name(t.pointee) + "*"
    if isinstance(t, VoidType):
        return "void"
    if isinstance(t, StructType):
        return f"struct {t.name}"
    return str(t)


def _param(p) -> dict:
    t = p.type
    entry = {"name": p.name, "type": type_name(t), "size": t.size}
    if t.is_ptr:
        pointee = t.pointee
        element = "pointer" if pointee.is_ptr else type_name(pointee)
        entry.update(kind="pointer", element=element, space=t.space)
    elif t.is_int or t.is_float or t.is_bool:
        entry["kind"] = "scalar"
    else:
        entry["kind"] = "aggregate"
    return entry


def of_module(module, target: str) -> dict:
    """The signature document of an IR module's kernels."""
    kernels = []
    for fn in module.kernels():
        entry = {"name": fn.name, "symbol": fn.symbol,
                 "block": list(fn.block_shape) if fn.block_shape else None,
                 "params": [_param(p) for p in fn.params]}
        need = max((int(i.attrs["bytes"]) for b in fn.blocks for i in b.instrs
                    if i.op == "tile.need_shared"), default=0)
        if need:
            entry["shared_bytes"] = need
        kernels.append(entry)
    return {"format": FORMAT, "target": target, "kernels": kernels}


def dumps(doc: dict) -> str:
    import json        # here, not at the top: a compile without --emit-signature skips it
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"
