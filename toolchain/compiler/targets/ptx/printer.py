"""PTX instruction objects -> text. The layout is fixed (tabs, `, ` between operands) so
output is deterministic and identical to what the string emitter produced before objects.
`format_body` is the hot loop of every compile: one pass, and operands (all `str`, Addr and
Vec included) joined without inspecting them."""
from __future__ import annotations

from .instr import COMMENT, LABEL, OP, SCOPE, PtxFunction, PtxInstr, PtxModule


def format_instr(i: PtxInstr) -> str:
    """One statement as it appears in a function body (leading tab included)."""
    return format_body([i])[0]


def format_body(body: list[PtxInstr]) -> list[str]:
    out = []
    append = out.append
    for i in body:
        kind = i.kind
        if kind == OP:
            ops = i.dsts + i.srcs                 # all str (Addr and Vec included)
            text = i.name + " " + ", ".join(ops) if ops else i.name
            if i.guard is not None:
                text = ("@!" if i.negated else "@") + i.guard + " " + text
            append("\t" + text + ";")
        elif kind == LABEL:
            append(f"{i.name}:\t// {i.comment}" if i.comment is not None else f"{i.name}:")
        elif kind == SCOPE:
            append("\t" + i.name)
        elif kind == COMMENT:
            append("\t// " + i.name)
        else:                                     # DIRECTIVE
            append("\t" + i.name + ";")
    return out


def format_function(f: PtxFunction) -> str:
    return "\n".join([f.head, "{", *f.reg_decls, *f.decls, *format_body(f.body), "}"])


def format_module(m: PtxModule) -> str:
    out = list(m.header)
    if m.decls:
        out += [*m.decls, ""]
    for f in m.functions:
        out += [format_function(f), ""]
    return "\n".join(out)
