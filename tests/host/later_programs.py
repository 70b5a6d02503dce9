"""A generator of later-tier host programs for fuzzing (tests/host/test_later_fuzz.py):
generic functions, structs and enums, a trait with impls and a bounded generic, closures
and function values, `match` statements and expressions, `defer`, `new` and `sizeof`,
nested as types allow (`Maybe<Box<int64>>`, `Fn(bool*) -> bool*`).

The programs are plausible but often ill-typed on purpose (a type argument or a value of
another type, a missing `match` arm, a trait without the impl): the compiler must answer
each with an executable or with located diagnostics. Unlike line mutations of existing
programs, most of them get past the parser into the generic, trait and closure paths."""
from __future__ import annotations

import random

PRIMS = ["int32", "int64", "float64", "bool", "uint8"]
LITERALS = {"bool": ["true", "false"], "float64": ["1.5", "0.25", "-3.0", "2.0"]}

PRELUDE = """import "std/io"
enum Maybe<T> { Just(T), Nothing }
struct Box<T> { v: T; n: int64; method get() -> T { return this.v; } }
trait Code { fn code(self: Self) -> int64; }
fn id<T>(x: T) -> T { return x; }
fn box<T>(x: T) -> Box<T> { var b: Box<T>; b.v = x; b.n = 1; return b; }
fn unwrap_or<T>(m: Maybe<T>, d: T) -> T { return match (m) { case Just(v): v, default: d }; }
fn apply<T>(f: Fn(T) -> T, x: T) -> T { return f(x); }
fn code_of<T: Code>(x: T) -> int64 { return x.code(); }
fn counter(start: int64) -> Fn() -> int64 {
    var n: int64 = start;
    return fn() -> int64 { n = n + 1; return n; };
}
fn adder<T>(k: T) -> Fn(T) -> T { return fn(x: T) -> T { return x + k; }; }
fn first_of<T>(xs: T*, n: int64, d: T) -> T {
    for (var i: int64 = 0; i < n; i = i + 1) {
        defer println_int(i);
        if (i == 1) { return xs[i]; }
    }
    return d;
}
fn flatten<T>(m: Maybe<Maybe<T>>) -> Maybe<T> {
    return match (m) { case Just(inner): inner, default: Nothing };
}
"""


def fn_param(t: str) -> str:
    """The parameter type of `Fn(P) -> R` (P may itself be a function type)."""
    depth = 0
    for i, c in enumerate(t[3:], 3):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return t[3:i]
            depth -= 1
    raise ValueError(t)


class Program:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.vars: list[tuple[str, str]] = []
        self.arrays = 0

    def type(self, depth: int = 0) -> str:
        r, k = self.rng, self.rng.random()
        if depth > 1 or k < 0.55:
            return r.choice(PRIMS)
        inner = self.type(depth + 1)
        if k < 0.7:
            return f"Maybe<{inner}>"
        if k < 0.85:
            return f"Box<{inner}>"
        if k < 0.93:
            return f"{inner}*"
        return f"Fn({inner}) -> {inner}"

    def near(self, t: str) -> str:
        """`t`, or now and then another type: the checker's mismatch paths."""
        return t if self.rng.random() < 0.8 else self.type()

    def expr(self, t: str, depth: int = 0) -> str:
        r = self.rng
        same = [v for v, vt in self.vars if vt == t]
        if same and r.random() < 0.4:
            return r.choice(same)
        if t in PRIMS:
            if depth < 2 and r.random() < 0.3:
                return f"id<{self.near(t)}>({self.expr(t, depth + 1)})"
            if depth < 2 and r.random() < 0.2 and t in ("int64", "int32"):
                return f"({self.expr(t, depth + 1)} + {self.expr(t, depth + 1)})"
            if depth < 2 and r.random() < 0.15:
                u = self.near(t)
                return (f"unwrap_or<{u}>({self.expr(f'Maybe<{u}>', depth + 1)}, "
                        f"{self.expr(t, depth + 1)})")
            return r.choice(LITERALS.get(t, ["0", "1", "7", "42", "255"]))
        if t.endswith("*"):
            return f"new {t[:-1]}" if r.random() < 0.7 else "0"
        if t.startswith("Maybe<"):
            return "Nothing" if r.random() < 0.3 else \
                f"Just({self.expr(self.near(t[6:-1]), depth + 1)})"
        if t.startswith("Box<"):
            return f"box<{self.near(t[4:-1])}>({self.expr(t[4:-1], depth + 1)})"
        a = fn_param(t)
        if not a:                                   # Fn() -> R: a counter
            return f"counter({self.expr('int64', depth + 1)})"
        return f"fn(x: {a}) -> {self.near(a)} {{ return x; }}"

    def declare(self, t: str) -> str:
        name = f"v{len(self.vars) + 1}"
        self.vars.append((name, t))
        return name

    def statement(self, depth: int = 0) -> str:
        r = self.rng
        k = r.randrange(14)
        if k == 0 or not self.vars:
            t = self.type()
            e = self.expr(self.near(t))
            return f"var {self.declare(t)}: {t} = {e};"
        name, t = r.choice(self.vars)
        if k == 1:
            return f"{name} = {self.expr(self.near(t))};"
        value = not t.endswith("*")
        if k == 2 and value and t.startswith("Maybe<"):
            arms = ["case Just(x): { println_int((int64)x); }",
                    'case Nothing: { println("none"); }', "default: {}"]
            r.shuffle(arms)
            return f"match ({name}) {{ {' '.join(arms[:r.randint(1, 3)])} }}"
        if k == 3 and value and t.startswith("Maybe<"):
            other = r.choice(["case Nothing", "default"])
            return (f"println_int((int64)match ({name}) {{ case Just(x): x, "
                    f"{other}: {self.expr(self.near(t[6:-1]))} }});")
        if k == 4 and value and t.startswith("Box<"):
            return f"println_int((int64){name}.get());"
        if k == 5 and value and t.startswith("Fn(") and fn_param(t):
            a = fn_param(t)
            return f"println_int((int64)apply<{self.near(a)}>({name}, {self.expr(a)}));"
        if k == 6:
            return f"defer println_int((int64)sizeof({t}));"
        if k == 7 and depth < 2:
            return f"if (true) {{ {self.statement(depth + 1)} {self.statement(depth + 1)} }}"
        if k == 8:
            u = self.near(t)
            return f"println_int(code_of<{u}>({self.expr(u)}));"
        if k == 9 and t.endswith("*") and t != "uint8*":
            return f"if ({name}) {{ *{name} = {self.expr(t[:-1])}; }}"
        if k == 11 and t in ("int32", "int64", "float64"):
            return f"println_int((int64)apply<{self.near(t)}>(adder<{t}>({self.expr(t)}), {name}));"
        if k == 12 and value and t.startswith("Maybe<"):
            return (f"println_int((int64)unwrap_or<{t[6:-1]}>(flatten<{self.near(t[6:-1])}>"
                    f"(Just({name})), {self.expr(t[6:-1])}));")
        if k == 13 and t in PRIMS:
            self.arrays += 1
            xs = f"xs{self.arrays}"
            return (f"var {xs}: {t}[3] = [{self.expr(t)}, {self.expr(t)}, {self.expr(t)}]; "
                    f"println_int((int64)first_of<{self.near(t)}>(&{xs}[0], "
                    f"{r.choice(['0', '2', '3'])}, {self.expr(t)}));")
        if k == 10:
            return (f"var {self.declare('Fn() -> int64')}: Fn() -> int64 = "
                    f"counter({self.expr('int64')});")
        return f"println_int((int64)sizeof({t}));"

    def text(self) -> str:
        r = self.rng
        body = [self.statement() for _ in range(r.randint(2, 9))]
        impls = [f"impl Code for {t} {{ fn code(self: Self) -> int64 {{ return "
                 f"{r.choice(['7', 'sizeof(Self)', '(int64)sizeof(Self) + 1'])}; }} }}"
                 for t in r.sample(PRIMS + ["Box<int64>", "Maybe<int32>"], r.randint(0, 3))]
        return "\n".join([PRELUDE.rstrip("\n"), *impls, "fn main() -> int32 {",
                          *("    " + s for s in body), "    return 0;", "}", ""])


def generate(seed: int) -> str:
    return Program(random.Random(seed)).text()
