"""A generator of kernels that use the later tier in device code (tests/frontend_sema/
test_later_kernels_fuzz.py): generic device helpers instantiated with several types, a
trait with impls on primitives and a bounded generic, struct methods, a tagged enum with
`match` statements and expressions, `defer`, and the kernel's own loads, stores, loops and
thread indices. Like tests/host/later_programs.py, the programs are plausible and now and
then ill-typed (a type argument of another type, a trait without the impl)."""
from __future__ import annotations

import random

TYPES = ["int32", "uint32", "float32", "int64", "float64"]
HEADER = """fn add_twice<T>(a: T, b: T) -> T { return a + b + b; }
fn pick<T>(c: bool, a: T, b: T) -> T { if (c) { return a; } return b; }
trait Half { fn half(self: Self) -> Self; }
fn halved<T: Half>(x: T) -> T { return x.half(); }
struct Acc { total: float32; n: int32;
    method mean() -> float32 { return this.total / (float32)(this.n + 1); } }
enum Op { Scale(float32), Shift(int32), Nop }
fn apply(op: Op, x: float32) -> float32 {
    return match (op) { case Scale(k): x * k, case Shift(s): x + (float32)s, default: x };
}
struct Pair<T> { a: T; b: T; method sum() -> T { return this.a + this.b; } }
fn pair<T>(a: T, b: T) -> Pair<T> { var r: Pair<T>; r.a = a; r.b = b; return r; }
fn choose(x: int32) -> Op {
    if (x > 2) { return Scale(0.5); }
    if (x < 0) { return Shift(x); }
    return Nop;
}
fn count_down(n: int32) -> int32 {
    var left: int32 = 0;
    for j in 0..n {
        defer left = left + 1;
        if (j == 3) { continue; }
        if (j > 6) { break; }
    }
    return left;
}
"""


class Kernel:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.locals: list[tuple[str, str]] = [("i", "int32")]
        self.has_acc = False

    def near(self, t: str) -> str:
        return t if self.rng.random() < 0.95 else self.rng.choice(TYPES)

    def value(self, t: str, depth: int = 0) -> str:
        r = self.rng
        same = [v for v, vt in self.locals if vt == t]
        k = r.random()
        if depth < 2 and k < 0.2:
            u = self.near(t)
            return f"add_twice<{u}>({self.value(t, depth + 1)}, {self.value(t, depth + 1)})"
        if depth < 2 and k < 0.3:
            return (f"pick<{self.near(t)}>({self.cond()}, {self.value(t, depth + 1)}, "
                    f"{self.value(t, depth + 1)})")
        if depth < 2 and k < 0.4:
            return f"halved<{self.near(t)}>({self.value(t, depth + 1)})"
        if depth < 2 and k < 0.5 and t == "float32":
            return f"apply({self.op()}, {self.value(t, depth + 1)})"
        if k < 0.7 and same:
            return r.choice(same)
        if k < 0.8:
            return f"({t})p[i % n]"
        return r.choice(["1", "2", "7"]) if "int" in t else r.choice(["0.5", "2.0", "1.25"])

    def cond(self) -> str:
        return self.rng.choice(["i < n", "(i & 1) == 0", "thread.x > 3", "n > 10"])

    def op(self) -> str:
        return self.rng.choice(["Scale(2.0)", "Shift((int32)thread.x)", "Op.Nop", "Nop",
                                "Scale(p[i % n])", "choose(q[i % n])",
                                "choose(count_down(n))"])

    def statement(self, depth: int = 0) -> str:
        r = self.rng
        k = r.randrange(9)
        if k == 0 and depth == 0:          # declared at the top: visible to the rest
            t = r.choice(TYPES)
            name = f"v{len(self.locals)}"
            line = f"var {name}: {t} = {self.value(self.near(t))};"
            self.locals.append((name, t))
            return line
        if k == 1:
            return f"p[i % n] = (float32){self.value(r.choice(TYPES))};"
        if k == 2 and depth < 2:
            return f"if ({self.cond()}) {{ {self.statement(depth + 1)} }}"
        if k == 3 and depth < 2:
            return (f"for j in 0..{r.choice(['4', 'n', '(int32)thread.x'])} "
                    f"{{ {self.statement(depth + 1)} }}")
        if k == 4 and depth == 0 and not self.has_acc:
            self.has_acc = True
            return ("var acc: Acc; acc.total = p[i % n]; acc.n = i; "
                    "q[i % n] = (int32)acc.mean();")
        if k == 5:
            return (f"match ({self.op()}) {{ case Scale(s): {{ p[i % n] = s; }} "
                    f"{r.choice(['case Shift(d): { q[i % n] = d; } ', ''])}"
                    f"{r.choice(['default: {}', 'case Nop: {}', ''])} }}")
        if k == 6:
            t = self.near(r.choice(TYPES))
            return (f"q[i % n] = (int32)pair<{t}>({self.value(t)}, "
                    f"{self.value(r.choice(TYPES))}).sum();")
        if k == 7 and depth < 2:
            return (f"for j in 0..{r.choice(['3', 'n'])} {{ if ({self.cond()}) {{ "
                    f"{r.choice(['break;', 'continue;', 'return;'])} }} "
                    f"{self.statement(depth + 1)} }}")
        return f"q[i % n] = {self.value('int32')};"

    def text(self) -> str:
        r = self.rng
        impls = [f"impl Half for {t} {{ fn half(self: Self) -> Self {{ return self / 2; }} }}"
                 for t in r.sample(TYPES, r.randint(1, len(TYPES)))]
        body = [self.statement() for _ in range(r.randint(2, 7))]
        return "\n".join([HEADER.rstrip("\n"), *impls,
                          "kernel k(p: float32*, q: int32*, n: int32) {",
                          "    var i: int32 = (int32)(block.x * block_dim.x + thread.x);",
                          "    if (i >= n) { return; }",
                          *("    " + s for s in body), "}", ""])


def generate(seed: int) -> str:
    return Kernel(random.Random(seed)).text()
