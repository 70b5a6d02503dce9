"""SPIR-V binary module writer: ids, deduplicated types/constants, sections, capabilities.

API (every id is a plain int):
    m = Module(addressing="Physical64", memory_model="OpenCL", version=(1, 0))
    u32 = m.type_int(32); f32 = m.type_float(32); v3 = m.type_vector(m.type_int(64), 3)
    p = m.type_pointer("CrossWorkgroup", f32)        # also type_void/bool/array/function
    c = m.const(u32, 7); z = m.const_null(p)          # also const_composite
    gid = m.variable(m.type_pointer("Input", v3), "Input")   # module-scope OpVariable
    std = m.ext_inst_import("OpenCL.std")
    fn = m.function(void, [p, p], name="vadd")       # fn.id, fn.params
    blk = fn.block()                                  # blk.id is its OpLabel
    x = blk.op("OpLoad", f32, ptr, "Aligned", 4)      # returns the result id (or None)
    blk.op("OpReturn")
    m.entry_point("Kernel", fn, "vadd", [gid]); m.execution_mode(fn, "LocalSize", 64, 1, 1)
    m.decorate(gid, "BuiltIn", "GlobalInvocationId"); m.name(gid, "gid")
    m.require_capability("Int64Atomics"); data = m.assemble()   # bytes, little-endian
Invariants:
  * Identical types and constants get one id (OpTypeX/OpConstantX with equal operands).
  * `assemble` lays out sections in the order of SPIR-V spec 2.4 (capabilities, extensions,
    ext-inst imports, memory model, entry points, execution modes, debug, annotations,
    types/constants/global variables, functions), function-local OpVariables first in the
    entry block.
  * OpCapability is emitted exactly for what the instructions and enumerants used require
    (grammar tables) plus the width rules the grammar cannot express (Int8/16/64,
    Float16/64) plus `require_capability`; one satisfied alternative is enough, and a
    capability implied by a declared one counts as declared.
  * Output is deterministic: the same calls give the same bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from . import _grammar as G
from .encoder import Encoded, SpirvBuildError, Words, encode, has_result

__all__ = ["Module", "Function", "Block", "SpirvBuildError", "Words"]

# Scalar widths that need a capability; the SPIR-V spec states these in prose, not grammar.
_INT_WIDTH_CAPS = {8: "Int8", 16: "Int16", 32: None, 64: "Int64"}
_FLOAT_WIDTH_CAPS = {16: "Float16", 32: None, 64: "Float64"}
_DEBUG_OPS = ("OpString", "OpSource", "OpSourceExtension", "OpSourceContinued", "OpName",
              "OpMemberName", "OpModuleProcessed")


# Encoded.version text -> _version_tuple(text) or () (parsed once per distinct text).
_NEED_VERSION: dict[str, tuple[int, ...]] = {}


def _version_tuple(text: str) -> tuple[int, int] | None:
    if not text or text == "None":
        return None
    major, minor = text.split(".")
    return int(major), int(minor)


@dataclass
class Block:
    """A basic block: its label id and instructions, appended in order."""
    function: "Function"
    id: int
    instructions: list[Encoded] = field(default_factory=list)

    def op(self, opname: str, *args: object) -> int | None:
        """Append an instruction; returns its result id, or None when it has none.

        `args` follow the grammar's operand order without IdResult (so the result type,
        when the opcode has one, comes first)."""
        enc = self.function.module.encode(opname, args)
        self.instructions.append(enc)
        return enc.result_id


@dataclass
class Function:
    """A function definition under construction (OpFunction ... OpFunctionEnd)."""
    module: "Module"
    id: int
    header: list[Encoded]
    params: list[int]
    blocks: list[Block] = field(default_factory=list)
    local_vars: list[Encoded] = field(default_factory=list)

    def block(self) -> Block:
        """Start a new block (the first one is the entry block)."""
        blk = Block(self, self.module.new_id())
        self.blocks.append(blk)
        return blk

    def local_variable(self, pointer_type: int, initializer: int | None = None) -> int:
        """An OpVariable of Function storage, placed at the top of the entry block."""
        args = (pointer_type, "Function") + (() if initializer is None else (initializer,))
        enc = self.module.encode("OpVariable", args)
        self.local_vars.append(enc)
        return enc.result_id  # type: ignore[return-value]

    def encoded(self) -> list[Encoded]:
        if not self.blocks:
            raise SpirvBuildError(f"function %{self.id} has no blocks")
        out = list(self.header)
        for i, blk in enumerate(self.blocks):
            out.append(self.module.encode("OpLabel", (), blk.id))
            if i == 0:
                out.extend(self.local_vars)
            out.extend(blk.instructions)
        out.append(self.module.encode("OpFunctionEnd", ()))
        return out


class Module:
    """One SPIR-V module; see the module docstring for the API and invariants."""

    def __init__(self, addressing: str = "Physical64", memory_model: str = "OpenCL",
                 version: tuple[int, int] = (1, 0), generator: int = 0):
        self.version, self.generator = version, generator
        self._next_id = 1
        self._extra_caps: list[str] = []
        self._extensions: list[str] = []
        self._imports: dict[str, int] = {}
        self._import_ops: list[Encoded] = []
        self._memory_model = encode("OpMemoryModel", (addressing, memory_model))
        self._entry_points: list[Encoded] = []
        self._exec_modes: list[Encoded] = []
        self._debug: list[Encoded] = []
        self._annotations: list[Encoded] = []
        self._globals: list[Encoded] = []
        self._dedup: dict[tuple, int] = {}
        self._types: dict[int, tuple] = {}
        self._functions: list[Function] = []

    # ids and encoding -------------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def encode(self, opname: str, args: tuple, result_id: int | None = None) -> Encoded:
        """Encode with a fresh result id when the opcode defines one and none is given."""
        if result_id is None and has_result(opname):
            result_id = self.new_id()
        enc = encode(opname, args, result_id)
        if enc.version:                 # "" (most opcodes): nothing to check
            self._check_version(enc)
        return enc

    def _check_version(self, enc: Encoded) -> None:
        need = _NEED_VERSION.get(enc.version)
        if need is None:
            need = _NEED_VERSION[enc.version] = _version_tuple(enc.version) or ()
        if need and need > self.version and not G.OPCODES[enc.opname][3]:
            raise SpirvBuildError(f"{enc.opname} needs SPIR-V {enc.version}, module is "
                                  f"{self.version[0]}.{self.version[1]}")

    def _unique(self, opname: str, *args: object) -> int:
        """Types and constants: one id per distinct (opcode, operands)."""
        key = (opname, args)
        if key not in self._dedup:
            enc = self.encode(opname, args)
            self._globals.append(enc)
            self._dedup[key] = enc.result_id  # type: ignore[assignment]
            self._types[enc.result_id] = key  # type: ignore[index]
        return self._dedup[key]

    # types ------------------------------------------------------------------------------
    def type_void(self) -> int:
        return self._unique("OpTypeVoid")

    def type_bool(self) -> int:
        return self._unique("OpTypeBool")

    def type_int(self, width: int, signed: int = 0) -> int:
        """OpTypeInt; OpenCL (Kernel) modules must use signedness 0 for every width."""
        if width not in _INT_WIDTH_CAPS:
            raise SpirvBuildError(f"unsupported integer width {width}")
        if _INT_WIDTH_CAPS[width]:
            self.require_capability(_INT_WIDTH_CAPS[width])  # type: ignore[arg-type]
        return self._unique("OpTypeInt", width, signed)

    def type_float(self, width: int) -> int:
        if width not in _FLOAT_WIDTH_CAPS:
            raise SpirvBuildError(f"unsupported float width {width}")
        if _FLOAT_WIDTH_CAPS[width]:
            self.require_capability(_FLOAT_WIDTH_CAPS[width])  # type: ignore[arg-type]
        return self._unique("OpTypeFloat", width)

    def type_vector(self, element: int, count: int) -> int:
        if count in (8, 16):
            self.require_capability("Vector16")
        return self._unique("OpTypeVector", element, count)

    def type_array(self, element: int, length: int) -> int:
        """OpTypeArray; `length` is a number (a 32-bit constant is made for it)."""
        return self._unique("OpTypeArray", element, self.const(self.type_int(32), length))

    def type_pointer(self, storage: str, pointee: int) -> int:
        return self._unique("OpTypePointer", storage, pointee)

    def type_function(self, ret: int, params: list[int] | tuple[int, ...]) -> int:
        return self._unique("OpTypeFunction", ret, *params)

    def type_of(self, type_id: int) -> tuple:
        """The (opcode, operands) key that defined a type or constant id."""
        return self._types[type_id]

    # constants --------------------------------------------------------------------------
    def const(self, type_id: int, value: int | float | bool) -> int:
        """A scalar constant of an int, float or bool type, encoded at the type's width."""
        op, args = self._types.get(type_id, (None, ()))
        if op == "OpTypeBool":
            return self._unique("OpConstantTrue" if value else "OpConstantFalse", type_id)
        if op == "OpTypeInt":
            width = args[0]
            raw = int(value) & ((1 << width) - 1)
            if width == 64:
                return self._unique("OpConstant", type_id, Words((raw & 0xFFFFFFFF, raw >> 32)))
            return self._unique("OpConstant", type_id, raw)
        if op == "OpTypeFloat":
            return self._unique("OpConstant", type_id, Words(_float_words(args[0], value)))
        raise SpirvBuildError(f"const: %{type_id} is not a scalar int/float/bool type")

    def const_null(self, type_id: int) -> int:
        return self._unique("OpConstantNull", type_id)

    def const_composite(self, type_id: int, parts: list[int]) -> int:
        return self._unique("OpConstantComposite", type_id, *parts)

    # module-level declarations ----------------------------------------------------------
    def variable(self, pointer_type: int, storage: str, initializer: int | None = None) -> int:
        """A module-scope OpVariable (never deduplicated: each call is a new variable)."""
        args = (pointer_type, storage) + (() if initializer is None else (initializer,))
        enc = self.encode("OpVariable", args)
        self._globals.append(enc)
        return enc.result_id  # type: ignore[return-value]

    def ext_inst_import(self, name: str) -> int:
        if name not in self._imports:
            enc = self.encode("OpExtInstImport", (name,))
            self._import_ops.append(enc)
            self._imports[name] = enc.result_id  # type: ignore[assignment]
        return self._imports[name]

    def function(self, ret: int, params: list[int], name: str | None = None,
                 control: str = "None") -> Function:
        fn_type = self.type_function(ret, params)
        head = self.encode("OpFunction", (ret, control, fn_type))
        fn = Function(self, head.result_id, [head], [])  # type: ignore[arg-type]
        for p in params:
            enc = self.encode("OpFunctionParameter", (p,))
            fn.header.append(enc)
            fn.params.append(enc.result_id)  # type: ignore[arg-type]
        if name is not None:
            self.name(fn.id, name)
        self._functions.append(fn)
        return fn

    def entry_point(self, model: str, fn: Function | int, name: str,
                    interface: list[int] = ()) -> None:  # type: ignore[assignment]
        fid = fn.id if isinstance(fn, Function) else fn
        self._entry_points.append(self.encode("OpEntryPoint", (model, fid, name, *interface)))

    def execution_mode(self, fn: Function | int, mode: str, *params: object) -> None:
        fid = fn.id if isinstance(fn, Function) else fn
        self._exec_modes.append(self.encode("OpExecutionMode", (fid, mode, *params)))

    def name(self, target: int, text: str) -> None:
        self._debug.append(self.encode("OpName", (target, text)))

    def debug(self, opname: str, *args: object) -> int | None:
        """Any other debug instruction (OpString, OpSource, OpMemberName...)."""
        if opname not in _DEBUG_OPS:
            raise SpirvBuildError(f"{opname} is not a debug instruction")
        enc = self.encode(opname, args)
        self._debug.append(enc)
        return enc.result_id

    def decorate(self, target: int, decoration: str, *params: object) -> None:
        self._annotations.append(self.encode("OpDecorate", (target, decoration, *params)))

    def member_decorate(self, struct_type: int, member: int, decoration: str,
                        *params: object) -> None:
        args = (struct_type, member, decoration, *params)
        self._annotations.append(self.encode("OpMemberDecorate", args))

    def require_capability(self, name: str) -> None:
        if name not in G.ENUMERANTS["Capability"]:
            raise SpirvBuildError(f"{name!r} is not a SPIR-V capability")
        if name not in self._extra_caps:
            self._extra_caps.append(name)

    def require_extension(self, name: str) -> None:
        if name not in self._extensions:
            self._extensions.append(name)

    # assembly ---------------------------------------------------------------------------
    def _body(self) -> list[Encoded]:
        """Everything after the capability and extension sections, in spec order."""
        out = list(self._import_ops) + [self._memory_model] + self._entry_points
        out += self._exec_modes + self._debug + self._annotations + self._globals
        for fn in self._functions:
            out += fn.encoded()
        return out

    def capabilities(self) -> list[str]:
        """The capabilities `assemble` declares, sorted by enumerant value."""
        return _resolve_capabilities(self._extra_caps, self._body())

    def extensions(self) -> list[str]:
        return self._extensions_of(self._body())

    def _extensions_of(self, body: list[Encoded]) -> list[str]:
        found = list(self._extensions)
        for enc in body:
            for ext, version in enc.extensions:
                needed = _version_tuple(version)
                if (needed is None or needed > self.version) and ext not in found:
                    found.append(ext)
        return found

    def assemble(self) -> bytes:
        """The binary module: header (magic, version, generator, bound, 0) then sections."""
        body = self._body()                 # built once: it re-encodes every block label
        head = [encode("OpCapability", (cap,))
                for cap in _resolve_capabilities(self._extra_caps, body)]
        head += [encode("OpExtension", (ext,)) for ext in self._extensions_of(body)]
        words = [G.MAGIC_NUMBER, self.version[0] << 16 | self.version[1] << 8,
                 self.generator, self._next_id, 0]
        for enc in head + body:
            words.extend(enc.words)
        return struct.pack(f"<{len(words)}I", *words)


def _float_words(width: int, value: float) -> tuple[int, ...]:
    fmt = {16: "<e", 32: "<f", 64: "<d"}[width]
    raw = int.from_bytes(struct.pack(fmt, value), "little")
    return (raw,) if width < 64 else (raw & 0xFFFFFFFF, raw >> 32)


def implied_closure(caps: list[str]) -> set[str]:
    """`caps` plus every capability they implicitly declare, transitively."""
    seen: set[str] = set()
    todo = list(caps)
    while todo:
        cap = todo.pop()
        if cap not in seen:
            seen.add(cap)
            todo.extend(G.CAPABILITY_IMPLIES.get(cap, ()))
    return seen


def _resolve_capabilities(explicit: list[str], body: list[Encoded]) -> list[str]:
    """Declare the single-choice requirements first, then satisfy each set of alternatives
    by an already-declared (or implied) capability, else by its first alternative."""
    chosen = list(explicit)
    reqs = [alts for enc in body for alts in enc.capabilities]
    for alts in reqs:
        if len(alts) == 1 and alts[0] not in chosen:
            chosen.append(alts[0])
    for alts in reqs:
        if len(alts) > 1 and not set(alts) & implied_closure(chosen):
            chosen.append(alts[0])
    values = G.ENUMERANTS["Capability"]
    return sorted(set(chosen), key=lambda c: values[c][0])
