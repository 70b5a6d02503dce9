"""Compact S-expression printer for AST nodes, used by the parser golden tests."""
from dataclasses import fields, is_dataclass

from toolchain.compiler.frontend import ast as A

_SKIP = {"span", "ty", "internal_name"}


def sexpr(node) -> str:
    if isinstance(node, A.Name):
        return node.name
    if isinstance(node, (A.IntLit, A.FloatLit, A.BoolLit)):
        return repr(node.value).lower() if isinstance(node, A.BoolLit) else repr(node.value)
    if isinstance(node, A.StrLit):
        return repr(node.value)
    if isinstance(node, A.NamedType):
        return node.name if node.qualifier is None else f"{node.qualifier}.{node.name}"
    if isinstance(node, A.PointerType):
        return sexpr(node.elem) + "*"
    if isinstance(node, A.ArrayType):
        return f"{sexpr(node.elem)}[{node.size}]"
    if isinstance(node, A.Binary):
        return f"({node.op} {sexpr(node.left)} {sexpr(node.right)})"
    if isinstance(node, A.Unary):
        return f"({node.op} {sexpr(node.operand)})"
    if is_dataclass(node):
        parts = [type(node).__name__]
        for f in fields(node):
            if f.name in _SKIP:
                continue
            v = getattr(node, f.name)
            if v is None or v == [] or v is False or v == "none":
                continue
            parts.append(f"{f.name}={sexpr(v)}" if not isinstance(v, A.Node) else sexpr(v))
        return "(" + " ".join(parts) + ")"
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return "(" + " ".join(sexpr(x) for x in node if not isinstance(x, A.Span)) + ")"
    if isinstance(node, (list, tuple)):
        return "[" + " ".join(sexpr(x) for x in node) + "]"
    return repr(node) if not isinstance(node, str) else node
