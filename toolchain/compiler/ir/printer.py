"""Stable textual IR (`--dump-ir`). Deterministic: same module, same text.

    kernel @vadd(%a: ptr<f32, global>, %n: i32) -> void block(256, 1, 1) {
      local $i: i32
    entry:
      %0 = gpu.index u32 {axis=x, kind=thread}
      cbr %3, then, exit
    }

Operands: `%N` instruction results (numbered per function in definition order), `%name`
parameters, `$name` locals, `@name` globals/functions, `5:i32` constants, block names for
targets. A phi prints its arms as `%3 = phi i32 [%0, entry], [%7, loop]`.
`reader.parse_module` reads this text back (round trip: parse(print(m)) prints the same).
"""
from __future__ import annotations

from .module import Const, Function, Global, Instr, Local, Module, Param, Undef
from .types import FloatType, StructType, Type


def _const(c: Const) -> str:
    v = c.value
    if isinstance(c.type, FloatType):
        return f"{float(v).hex()}:{c.type}" if v != v or v in (float("inf"), float("-inf")) \
            else f"{v!r}:{c.type}"
    if isinstance(v, bool):
        return f"{'true' if v else 'false'}:{c.type}"
    return f"{v}:{c.type}"


def _attr(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_attr(x) for x in v) + ")"
    if isinstance(v, Type):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    if isinstance(v, str):
        return v if v.replace("_", "").replace(".", "").isalnum() else repr(v)
    return str(v)


class _Namer:
    def __init__(self) -> None:
        self.ids: dict[int, str] = {}

    def name(self, v) -> str:
        if isinstance(v, Instr):
            key = id(v)
            if key not in self.ids:
                self.ids[key] = f"%{len(self.ids)}"
            return self.ids[key]
        if isinstance(v, Const):
            return _const(v)
        if isinstance(v, Param):
            return f"%{v.name}"
        if isinstance(v, Local):
            return f"${v.name}"
        if isinstance(v, (Global, Function)):
            return f"@{v.name}"
        if isinstance(v, Undef):
            return f"undef:{v.type}"
        return repr(v)


def format_instr(ins: Instr, namer: _Namer) -> str:
    if ins.op == "phi":
        arms = ", ".join(f"[{namer.name(v)}, {b.name}]" for v, b in ins.incoming)
        return f"{namer.name(ins)} = phi {ins.type} {arms}"
    ops = [namer.name(o) for o in ins.operands] + [t.name for t in ins.targets]
    text = ins.op if str(ins.type) == "void" else f"{ins.op} {ins.type}"
    if ops:
        text += " " + ", ".join(ops)
    if ins.attrs:
        text += " {" + ", ".join(f"{k}={_attr(ins.attrs[k])}" for k in sorted(ins.attrs)) + "}"
    if str(ins.type) != "void":
        return f"{namer.name(ins)} = {text}"
    return text


def format_function(fn: Function) -> str:
    params = ", ".join(f"%{p.name}: {p.type}" for p in fn.params)
    head = f"{fn.kind} @{fn.name}({params}) -> {fn.ret}"
    if fn.link_name:
        head += f' link "{fn.link_name}"'
    if fn.linkage != "internal" and fn.kind != "extern":
        head += f" {fn.linkage}"
    if fn.block_shape:
        head += " block({}, {}, {})".format(*fn.block_shape)
    if fn.per_warp:
        head += " per(warp)"
    if fn.is_extern:
        return head
    namer = _Namer()
    for ins in fn.instructions():          # number results in definition order, so a phi
        if str(ins.type) != "void":        # may name a value defined further down
            namer.name(ins)
    lines = [head + " {"]
    lines += [f"  local ${l.name}: {l.type}" for l in fn.locals]
    for b in fn.blocks:
        lines.append(f"{b.name}:")
        lines += ["  " + format_instr(i, namer) for i in b.instrs]
    lines.append("}")
    return "\n".join(lines)


def _init(g: Global) -> str:
    if g.init is None:
        return "zero"
    if isinstance(g.init, bytes):
        return "c" + repr(g.init)[1:]
    items = []
    for off, t, v in g.init:
        val = f"@{v.name}" if isinstance(v, (Global, Function)) else repr(v)
        items.append(f"{off}: {t} {val}")
    return "{" + ", ".join(items) + "}"


def format_module(m: Module) -> str:
    out = [f"; module {m.name}"]
    for s in m.structs.values():
        if isinstance(s, StructType):
            out.append(f"struct %{s.name} {{ " +
                       ", ".join(f"{n}: {t}" for n, t in s.fields) + " }")
    for g in m.globals.values():
        flags = " const" if g.constant else ""
        flags += f" {g.linkage}" if g.linkage != "internal" else ""
        flags += f' link "{g.link_name}"' if g.link_name else ""
        space = f" {g.space}" if g.space != "generic" else ""
        out.append(f"global @{g.name}: {g.value_type}{space}{flags} = {_init(g)}")
    for d in m.kernel_decls.values():
        if d.name not in m.functions:
            shape = " block({}, {}, {})".format(*d.block_shape) if d.block_shape else ""
            out.append(f"kernel_decl @{d.name}({', '.join(map(str, d.params))}){shape}")
    for f in m.functions.values():
        out.append(format_function(f))
    return "\n".join(out) + "\n"
