"""Random scalar kernels: the host generator's expressions and statements inside a kernel
body, one work item per input row, checked against the same body compiled as C on the CPU.

Each kernel reads one value of every scalar type per work item from input buffers (int8 ..
uint64, float32, float64), runs straight-line code with ifs, loops and pure scalar helper
calls (device `.func`s), and stores M int64 results at out[i*M + j] (floats through the
guarded `f2i`). Float arithmetic is `+ - *` only, compiled with `--fp-contract=off`:
OpenCL does not require correctly rounded division. The CPU reference prints the same M
values per row. Runners (PoCL for SPIR-V, the GPU harness for PTX) live with the tests.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from .gen import Gen, Scope
from .model import C_NAMES, FLOATS, INTS, is_float, wrap
from .program import C_PRELUDE, Call, Decl, Expr, Function, Lit, Return, Var

TYPES = list(INTS) + list(FLOATS)
DTYPES = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
          "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
          "float32": "float32", "float64": "float64"}
BLOCK = 64


class Load(Expr):
    def __init__(self, buf: str, ty: str):
        self.buf, self.ty = buf, ty

    def m(self) -> str:
        return f"{self.buf}[i]"

    def c(self) -> str:
        return f"{self.buf}[i]"


class KernelGen(Gen):
    """Gen restricted to what device code allows: scalars only, no recursion, no pointer
    parameters, no printing; float division is left out (see module doc)."""

    def decl(self, scope: Scope):
        t = self.scalar_type()
        name = self.fresh("v")
        if self.rng.random() < 0.1 and t in INTS:
            v = self.rng.choice([1, 7, 255, -1, 65536, 3000000000, -129])
            scope.add("const", name, t, wrap(v, t))
            return Decl(name, t, Lit(v), const=True)
        init = self.value_for(scope, t, 3)
        scope.add("var", name, t, None)
        return Decl(name, t, init)

    def binary(self, scope, depth, want):
        e = super().binary(scope, depth, want)
        if getattr(e, "op", None) == "/" and is_float(e.ty):
            e.op = "*"
        return e

    def lvalue(self, scope):
        items = [it for it in scope.all() if it[0] == "var"]
        if not items:
            return None
        _, name, t, _ = self.rng.choice(items)
        return Var(name, t)

    def make_helper(self) -> None:
        r = self.rng
        name = self.fresh("h")
        scope = Scope()
        params = []
        for i in range(r.randint(1, 10)):
            t = self.scalar_type()
            params.append((f"p{i}", t))
            scope.add("ro", f"p{i}", t, None)
        ret = self.scalar_type()
        body = [self.stmt(Scope(scope), 1, 0, False) for _ in range(r.randint(0, 3))]
        body.append(Return(self.value_for(scope, ret, 3)))
        self.helpers.append((Function(name, params, ret, body), True))


@dataclass
class KernelCase:
    """`parts` (helpers, body statements, outputs) is what `render` made it from."""
    seed: int
    mettle: str             # the kernel module
    c: str                  # the CPU reference program (prints n*m lines)
    name: str
    inputs: list            # [(buffer name, dtype, [values])]
    n: int                  # work items
    m: int                  # outputs per work item
    parts: tuple = ()


def _values(rng: random.Random, t: str, n: int) -> list:
    if t in FLOATS:
        pool = [0.0, 1.5, -2.25, 0.1, 1e6, -3.0, 65535.5]
        return [rng.choice(pool) if rng.random() < 0.5 else rng.uniform(-1e4, 1e4)
                for _ in range(n)]
    bits, signed = INTS[t]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    edge = [lo, hi, 0, 1, -1 if signed else hi - 1, lo + 1]
    return [rng.choice(edge) if rng.random() < 0.4 else rng.randint(lo, hi) for _ in range(n)]


def _c_literal(v, t: str) -> str:
    if t in FLOATS:
        return repr(float(v))
    return f"{v}ULL" if not INTS[t][1] else (f"{v}LL" if v != -(1 << 63) else
                                            "(-9223372036854775807LL-1)")


def generate_kernel(seed: int, n: int = 2 * BLOCK) -> KernelCase:
    g = KernelGen(seed)
    r = g.rng
    for _ in range(r.randint(0, 3)):
        g.make_helper()
    scope = Scope()
    inputs, body = [], []
    for t in TYPES:
        buf = f"in_{t}"
        inputs.append((buf, DTYPES[t], _values(r, t, n)))
        name = g.fresh("x")
        body.append(Decl(name, t, Load(buf, t)))
        scope.add("var", name, t, None)
    body += [g.stmt(scope, 2, 0, False) for _ in range(r.randint(4, 10))]
    outs = [(nm, t, extra) for kind, nm, t, extra in scope.all() if kind in ("var", "const")]
    return render(seed, [f for f, _ in g.helpers], body, outs, inputs, n)


def render(seed: int, helpers: list, body: list, outs: list, inputs: list,
           n: int) -> KernelCase:
    """The kernel module and its C reference from the generated pieces (the reducer
    re-renders after each deletion)."""
    m = len(outs)

    def out_expr(nm, t, cv):
        v = Var(nm, t, cv)
        return Call("f2i", [v], "int64") if is_float(t) else v
    kname = f"dk{seed}"
    params = "out: int64*, " + ", ".join(f"{b}: {t}*" for b, t, _ in inputs) + ", n: int32"
    mk = ["fn f2i(x: float64) -> int64 {",
          "    if (x > -1000000000000000.0 && x < 1000000000000000.0) { return (int64)x; }",
          "    return -1;", "}"]
    for f in helpers:
        mk += f.m()
    mk += [f"kernel {kname}({params}) {{",
           "    var i: int32 = (int32)(block.x * block_dim.x + thread.x);",
           "    if (i < n) {"]
    for s in body:
        mk += s.m("        ")
    for j, (nm, t, cv) in enumerate(outs):
        mk.append(f"        out[i * {m} + {j}] = {out_expr(nm, t, cv).m()};")
    mk += ["    }", "}"]
    ck = [C_PRELUDE]
    for b, t, vals in inputs:
        ck.append(f"static const {C_NAMES[t]} {b}[{n}] = {{" +
                  ", ".join(_c_literal(v, t) for v in vals) + "};")
    ck += [f.c_proto() + ";" for f in helpers]
    for f in helpers:
        ck += f.c()
    ck += ["int main(void) {", f"    for (int32_t i = 0; i < {n}; i++) {{"]
    for s in body:
        ck += s.c("        ")
    for nm, t, cv in outs:
        ck.append(f"        print_int({out_expr(nm, t, cv).c()}); newline();")
    ck += ["    }", "    return 0;", "}"]
    case = KernelCase(seed, "\n".join(mk) + "\n", "\n".join(ck) + "\n", kname, inputs, n, m)
    case.parts = (helpers, body, outs)
    return case


def reduce_kernel(case: KernelCase, interesting) -> tuple[KernelCase, int]:
    """Delete statements of the kernel body and its helpers while `interesting(case)`."""
    from .program import Program
    from .reduce import reduce_program
    helpers, body, outs = case.parts
    holder = Program(case.seed, [], list(helpers) + [Function("body", [], "void", body)])

    def as_case(p):
        return render(case.seed, p.functions[:-1], p.functions[-1].body, outs, case.inputs,
                      case.n)
    small, checks = reduce_program(holder, lambda p: interesting(as_case(p)))
    return as_case(small), checks


def main(seeds, args) -> int:
    """`python3 -m tools.difftest --kernels`: PTX (ptxas) and SPIR-V (PoCL when present)."""
    import sys
    from . import kernel_runs
    return kernel_runs.cli(seeds, args, sys.stdout)
