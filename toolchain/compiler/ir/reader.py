"""Reads the textual IR that `printer.py` writes (`--dump-ir`), so IR tests are IR text.

    m = parse_module(text)             # format_module(parse_module(t)) == t for printed t
    fn = parse_function(text)          # one function; calls/globals it names are declared

Grammar (one construct per line; `printer.py` documents the operand spellings):
    module   = "; module" NAME { struct | global | kernel_decl | function }
    struct   = "struct %" NAME "{" [FIELD ":" type {"," ...}] "}"
    global   = "global @" NAME ":" type [space] ["const"] [linkage] ['link "' SYM '"'] "=" init
    function = KIND "@" NAME "(" params ")" "->" type [link] [linkage] [block(..)] [per(warp)]
               ["{" {"local $" NAME ":" type} {LABEL ":" {instr}} "}"]
    instr    = ["%" N "=" op type | op] operands ["{" attrs "}"]   (phi: "[" value "," LABEL "]"...)
Values may be used before their definition line (phis), so a body is read in two steps:
instructions first, operands second. Bad text raises `IRParseError` with the line number.
"""
from __future__ import annotations

import ast
import re

from . import tensor as T
from .module import (Block, Const, Function, Global, Instr, KernelDecl, Local, Module, Param,
                     Undef)
from .types import (SCALARS, VOID, ArrayType, FnPtrType, PtrType, StructType, Type,
                    VectorType)

_NAME = re.compile(r"[A-Za-z0-9_.]+")
_INT = re.compile(r"-?\d+$")
_WORD = re.compile(r"[^,:\s{}\[\]]+")       # a literal or a block label
_TYPE_ATTRS = ("type", "elem")          # attrs whose values are IR types, not strings


class IRParseError(ValueError):
    def __init__(self, line: int, msg: str):
        super().__init__(f"line {line}: {msg}")
        self.line = line


class _Cursor:
    """A position in one line, with the small lexing steps the grammar needs."""

    def __init__(self, text: str, lineno: int, structs: dict[str, Type]):
        self.s, self.i, self.lineno, self.structs = text, 0, lineno, structs

    def fail(self, msg: str) -> IRParseError:
        return IRParseError(self.lineno, f"{msg} at column {self.i + 1}: {self.s.strip()}")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def peek(self, lit: str) -> bool:
        self.ws()
        return self.s.startswith(lit, self.i)

    def eat(self, lit: str) -> bool:
        if self.peek(lit):
            self.i += len(lit)
            return True
        return False

    def expect(self, lit: str) -> None:
        if not self.eat(lit):
            raise self.fail(f"expected {lit!r}")

    def name(self) -> str:
        self.ws()
        m = _NAME.match(self.s, self.i)
        if not m:
            raise self.fail("expected a name")
        self.i = m.end()
        return m.group()

    def at_end(self) -> bool:
        self.ws()
        return self.i >= len(self.s)

    def quoted(self) -> str:
        """A Python string literal starting here."""
        self.ws()
        q = self.s[self.i]
        j = self.i + 1
        while j < len(self.s) and self.s[j] != q:
            j += 2 if self.s[j] == "\\" else 1
        text = self.s[self.i:j + 1]
        self.i = j + 1
        return ast.literal_eval(text)

    # type = scalar | "void" | "ptr<" type ["," space] ">" | "[" N "x" type "]"
    #      | "vec<" N "x" type ">" | "%" NAME | "fn(" [type {"," type}] ")" "->" type
    def type(self) -> Type:
        if self.eat("vec<"):
            count = int(self.name())
            self.expect("x")
            elem = self.type()
            self.expect(">")
            return VectorType(elem, count)
        if self.eat("ptr<"):
            pointee = self.type()
            space = self.name() if self.eat(",") else "generic"
            self.expect(">")
            return PtrType(pointee, space)
        if self.eat("["):
            count = int(self.name())
            self.expect("x")
            elem = self.type()
            self.expect("]")
            return ArrayType(elem, count)
        if self.eat("%"):
            n = self.name()
            # a struct not yet complete is a fieldless placeholder, as in the frontend
            # (only pointers reach a struct that is still being defined)
            return self.structs.get(n) or StructType(n, ())
        if self.eat("fn("):
            params = []
            while not self.eat(")"):
                params.append(self.type())
                self.eat(",")
            self.expect("->")
            return FnPtrType(tuple(params), self.type())
        n = self.name()
        if n == "void":
            return VOID
        if n not in SCALARS:
            raise self.fail(f"unknown type {n}")
        return SCALARS[n]

    def attr_value(self, key: str):
        self.ws()
        if self.eat("("):
            items = []
            while not self.eat(")"):
                items.append(self.attr_value(key))
                self.eat(",")
            return tuple(items)
        c = self.s[self.i] if self.i < len(self.s) else ""
        if c in "'\"":
            return self.quoted()
        if c == "<":
            j = self.i + 1                              # the `>` that is not `->`
            while j < len(self.s) and (self.s[j] != ">" or self.s[j - 1] == "-"):
                j += 1
            text, self.i = self.s[self.i + 1:j], j + 1
            try:
                return _tensor_desc(text)
            except (ValueError, TypeError, AttributeError):
                raise self.fail(f"bad tensor descriptor <{text}>") from None
        if key in _TYPE_ATTRS or c in "[%" or self.s.startswith(("ptr<", "fn("), self.i):
            return self.type()
        start = self.i
        if c == "-":
            self.i += 1
        word = self.s[start:self.i] + self.name()
        if self.peek("("):                      # a descriptor: TensorDesc(m=16, ...)
            return self.descriptor(word)
        if word in ("true", "false"):
            return word == "true"
        if word == "none":
            return None
        if _INT.match(word):
            return int(word)
        try:
            return float(word) if any(ch in word for ch in ".e") and word[0] in "-0123456789" \
                else word
        except ValueError:
            return word

    def descriptor(self, cls_name: str):
        depth, j = 0, self.i
        while j < len(self.s):
            depth += {"(": 1, ")": -1}.get(self.s[j], 0)
            j += 1
            if depth == 0:
                break
        call = ast.parse(cls_name + self.s[self.i:j], mode="eval").body
        self.i = j
        cls = getattr(T, cls_name, None)
        if cls is None or not isinstance(call, ast.Call):
            raise self.fail(f"unknown descriptor {cls_name}")
        return cls(**{k.arg: ast.literal_eval(k.value) for k in call.keywords})


_MNK = re.compile(r"m(\d+)n(\d+)(?:k(\d+))?$")


def _tensor_desc(text: str):
    """The `<...>` spellings of ir/tensor.py's TensorDesc and EpilogueDesc `__str__`."""
    words = text.split()
    m = _MNK.match(words[0])
    if m.group(3) is not None:                      # <m16n16k16 AxB->C/D key=value...>
        ab, cd = words[1].split("->")
        a, b = ab.split("x")
        acc, res = cd.split("/")
        kw = {}
        kinds = {f.name: f.default for f in T.fields(T.TensorDesc)}
        for w in words[2:]:
            k, v = w.split("=", 1)
            kw[k] = _desc_field(v, kinds[k])
        return T.TensorDesc(int(m.group(1)), int(m.group(2)), int(m.group(3)), a, b, acc,
                            res, **kw)
    # <m16n16 f32 row ld=16 bias=none/row ldbias=0 identity subgroup>
    elem, layout, ld, bias, ldbias, act, scope = words[1:]
    bias_mode, bias_layout = bias[len("bias="):].split("/")
    return T.EpilogueDesc(int(m.group(1)), int(m.group(2)), elem, layout,
                          _desc_field(ld[3:], None), bias_mode, bias_layout,
                          _desc_field(ldbias[7:], None), act, scope)


def _desc_field(v: str, default):
    if v == "None":
        return None
    if isinstance(default, bool):
        return v == "True"
    if default is None or isinstance(default, int):
        return int(v) if _INT.match(v) else v
    return v


def _parse_const(text: str, ty: Type):
    if ty.is_float:
        return Const(ty, float.fromhex(text) if text.startswith(("0x", "-0x")) else float(text))
    if ty.is_bool:
        return Const(ty, text == "true")
    return Const(ty, int(text))


class _FunctionReader:
    def __init__(self, reader: "_ModuleReader", fn: Function, lines: list[tuple[int, str]]):
        self.r, self.fn, self.lines = reader, fn, lines
        self.values: dict[str, object] = {f"%{p.name}": p for p in fn.params}
        self.blocks: dict[str, Block] = {}
        self.locals: dict[str, Local] = {}

    def read(self) -> None:
        pending: list[tuple[Instr, _Cursor]] = []
        block = None
        for n, text in self.lines:
            if text.startswith("  local $"):
                c = self.r.cursor(text[len("  local $"):], n)
                name = c.name()
                c.expect(":")
                loc = Local(c.type(), name)
                self.fn.locals.append(loc)
                self.locals[name] = loc
            elif not text.startswith(" "):
                label = text.rstrip()
                if not label.endswith(":"):
                    raise IRParseError(n, f"expected a block label: {text}")
                block = self.block(label[:-1])
                if block in self.fn.blocks:
                    raise IRParseError(n, f"block {block.name} defined twice")
                self.fn.blocks.append(block)
            else:
                if block is None:
                    raise IRParseError(n, "instruction outside a block")
                pending.append(self.instr(block, self.r.cursor(text, n)))
        defined = set(self.fn.blocks)
        for ins, c in pending:
            self.operands(ins, c)
            for t in ins.targets:
                if t not in defined:
                    raise IRParseError(c.lineno, f"undefined block {t.name}")

    def block(self, name: str) -> Block:
        if name not in self.blocks:
            self.blocks[name] = Block(name, function=self.fn)
        return self.blocks[name]

    def instr(self, block: Block, c: _Cursor) -> tuple[Instr, _Cursor]:
        result = None
        if c.eat("%"):
            result = "%" + c.name()
            c.expect("=")
        op = c.name()
        ty = c.type() if result is not None else VOID
        ins = Instr(op, ty, [], {}, [], None, block)
        block.instrs.append(ins)
        if result is not None:
            if result in self.values:
                raise c.fail(f"{result} defined twice")
            self.values[result] = ins
        return ins, c

    def operands(self, ins: Instr, c: _Cursor) -> None:
        if ins.op == "phi":
            while c.eat("["):
                ins.operands.append(self.value(c))
                c.expect(",")
                ins.targets.append(self.block(c.name()))
                c.expect("]")
                c.eat(",")
        else:
            while not c.at_end() and not c.peek("{"):
                v = self.value(c, allow_block=True)
                (ins.targets if isinstance(v, Block) else ins.operands).append(v)
                c.eat(",")
        if c.eat("{"):
            while not c.eat("}"):
                key = c.name()
                c.expect("=")
                ins.attrs[key] = c.attr_value(key)
                c.eat(",")
        if not c.at_end():
            raise c.fail("unexpected text")

    def value(self, c: _Cursor, allow_block: bool = False):
        c.ws()
        if c.eat("%"):
            key = "%" + c.name()
            if key not in self.values:
                raise c.fail(f"undefined value {key}")
            return self.values[key]
        if c.eat("$"):
            name = c.name()
            if name not in self.locals:
                raise c.fail(f"undeclared local ${name}")
            return self.locals[name]
        if c.eat("@"):
            return self.r.symbol(c.name(), c)
        m = _WORD.match(c.s, c.i)
        if not m:
            raise c.fail("expected a value")
        c.i = m.end()
        word = m.group()
        if c.eat(":"):
            ty = c.type()
            if word == "undef":
                return Undef(ty)
            try:
                return _parse_const(word, ty)
            except ValueError:
                raise c.fail(f"bad constant {word}") from None
        if not allow_block:
            raise c.fail(f"expected a value, got {word}")
        return self.block(word)


class _ModuleReader:
    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.m = Module("ir")
        self.bodies: list[tuple[Function, list[tuple[int, str]]]] = []
        self.inits: list[tuple[Global, int, str]] = []

    def cursor(self, text: str, lineno: int) -> _Cursor:
        return _Cursor(text, lineno, self.m.structs)

    def symbol(self, name: str, c: _Cursor):
        if name in self.m.functions:
            return self.m.functions[name]
        if name in self.m.globals:
            return self.m.globals[name]
        raise c.fail(f"undefined symbol @{name}")

    def read(self) -> Module:
        i = 0
        while i < len(self.lines):
            n, text = i + 1, self.lines[i]
            i += 1
            if not text.strip():
                continue
            if text.startswith("; module "):
                self.m.name = text[len("; module "):].strip()
            elif text.startswith(";"):
                continue
            elif text.startswith("struct %"):
                self.struct(self.cursor(text[len("struct %"):], n))
            elif text.startswith("global @"):
                self.global_(self.cursor(text[len("global @"):], n))
            elif text.startswith("kernel_decl @"):
                self.kernel_decl(self.cursor(text[len("kernel_decl @"):], n))
            else:
                fn, has_body = self.header(self.cursor(text, n))
                if has_body:
                    body = []
                    while i < len(self.lines) and self.lines[i] != "}":
                        body.append((i + 1, self.lines[i]))
                        i += 1
                    if i >= len(self.lines):
                        raise IRParseError(n, f"function @{fn.name} has no closing brace")
                    i += 1
                    self.bodies.append((fn, body))
        for g, n, init in self.inits:
            g.init = self.init(self.cursor(init, n))
        for fn, body in self.bodies:
            _FunctionReader(self, fn, body).read()
        return self.m

    def struct(self, c: _Cursor) -> None:
        name = c.name()
        c.expect("{")
        fields = []
        while not c.eat("}"):
            f = c.name()
            c.expect(":")
            fields.append((f, c.type()))
            c.eat(",")
        self.m.structs[name] = StructType(name, tuple(fields))

    def global_(self, c: _Cursor) -> None:
        name = c.name()
        c.expect(":")
        ty = c.type()
        g = Global(name, ty)
        words = c.s[c.i:].split(" = ", 1)
        if len(words) != 2:
            raise c.fail("expected `= init`")
        flags, init = words
        fc = self.cursor(flags, c.lineno)
        while not fc.at_end():
            if fc.eat("link"):
                g.link_name = fc.quoted()
                continue
            w = fc.name()
            if w == "const":
                g.constant = True
            elif w in ("export", "import", "internal"):
                g.linkage = w
            else:
                g.space = w
        self.m.globals[name] = g
        self.inits.append((g, c.lineno, init))

    def init(self, c: _Cursor):
        if c.eat("zero"):
            return None
        if c.peek("c'") or c.peek('c"'):
            c.i += 1
            c.ws()
            start = c.i
            c.quoted()
            return ast.literal_eval("b" + c.s[start:c.i])
        c.expect("{")
        items = []
        while not c.eat("}"):
            off = int(c.name())
            c.expect(":")
            ty = c.type()
            if c.eat("@"):
                v = self.symbol(c.name(), c)
            else:
                c.ws()
                start = c.i
                while c.i < len(c.s) and c.s[c.i] not in ",}":
                    c.i += 1
                v = ast.literal_eval(c.s[start:c.i].strip())
            items.append((off, ty, v))
            c.eat(",")
        return items

    def kernel_decl(self, c: _Cursor) -> None:
        name = c.name()
        c.expect("(")
        params = []
        while not c.eat(")"):
            params.append(c.type())
            c.eat(",")
        shape = self.shape(c) if c.eat("block(") else None
        self.m.kernel_decls[name] = KernelDecl(name, params, shape)

    def shape(self, c: _Cursor) -> tuple[int, int, int]:
        dims = []
        while not c.eat(")"):
            dims.append(int(c.name()))
            c.eat(",")
        return tuple(dims)

    def header(self, c: _Cursor) -> tuple[Function, bool]:
        kind = c.name()
        if kind not in ("function", "kernel", "extern"):
            raise c.fail(f"expected a function, got {kind}")
        c.expect("@")
        name = c.name()
        c.expect("(")
        params = []
        while not c.eat(")"):
            c.expect("%")
            pname = c.name()
            c.expect(":")
            params.append(Param(c.type(), pname, len(params)))
            c.eat(",")
        c.expect("->")
        fn = Function(name, params, c.type(), kind=kind,
                      linkage="import" if kind == "extern" else "internal")
        has_body = False
        while not c.at_end():
            if c.eat("link"):
                fn.link_name = c.quoted()
            elif c.eat("block("):
                fn.block_shape = self.shape(c)
            elif c.eat("per(warp)"):
                fn.per_warp = True
            elif c.eat("{"):
                has_body = True
            else:
                w = c.name()
                if w not in ("export", "import", "internal"):
                    raise c.fail(f"unexpected {w}")
                fn.linkage = w
        self.m.functions[name] = fn
        if kind == "kernel":
            self.m.kernel_decls[name] = KernelDecl(name, [p.type for p in params],
                                                   fn.block_shape, fn.per_warp)
        return fn, has_body


def parse_module(text: str) -> Module:
    return _ModuleReader(text).read()


def parse_function(text: str) -> Function:
    """The single function with a body in `text` (other lines may declare what it uses)."""
    m = parse_module(text)
    bodies = [f for f in m.functions.values() if f.blocks]
    if len(bodies) != 1:
        raise IRParseError(1, f"expected one function with a body, found {len(bodies)}")
    return bodies[0]
