"""Later-tier programs (generics, traits and methods, closures, tagged enums and `match`,
`defer`/`errdefer`, `new`, `import_str`, struct values) against the C oracle.

Each seed makes one program of several *cases*, one per construct, in a random order and
with random shapes: the expressions (random trees over `+ - * & | ^` and small literals),
the type arguments, the constants that steer loops, breaks, returns and match arms, the
embedded file's bytes. Each case prints what it computes. The C translation spells out what
the construct means: one C function per generic instance, the closure record as a
`calloc`ed struct, the tagged enum as a tag and a union, every deferred call at every exit
it runs on, `calloc` for `new`, the embedded bytes as an array. Integer arithmetic is 32 or
64 bits wide on both sides (C's `-fwrapv` matches Mettle's wrapping; narrower types would
promote in C), so any difference is a compiler bug.

    python3 -m tools.difftest --later --seeds 0:20      # every host target, -O0 and -O
    python3 -m tools.difftest --later --seeds 3 --show  # one program, its C and its files
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from .runner import OPT_LEVELS, Outcome, run_c, run_mettle

M_HEAD = 'import "std/io";\nfn out(v: int64) { print_int(v); newline(); }\n'
C_HEAD = """#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static void out(int64_t v) { printf("%lld\\n", (long long)v); }
"""
# Mettle type -> C type; instances of generics use these (32/64-bit: see module doc)
WIDE = {"int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t"}
OPS = ("+", "-", "*", "&", "|", "^")


@dataclass
class Case:
    m_decls: list[str] = field(default_factory=list)
    c_decls: list[str] = field(default_factory=list)
    m_body: list[str] = field(default_factory=list)     # statements of the case function
    c_body: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class LaterProgram:
    seed: int
    cases: list[tuple[str, Case]]

    def mettle(self) -> str:
        out = [f"// difftest later-tier program, seed {self.seed}", M_HEAD]
        for name, c in self.cases:
            out += c.m_decls + [f"fn {name}() {{"] + [f"    {s}" for s in c.m_body] + ["}"]
        out += ["fn main() -> int32 {"] + [f"    {n}();" for n, _ in self.cases]
        return "\n".join(out + ["    return 0;", "}"]) + "\n"

    def c(self) -> str:
        out = [f"/* difftest later-tier program, seed {self.seed} */", C_HEAD]
        for name, c in self.cases:
            out += c.c_decls + [f"static void {name}(void) {{"] + \
                [f"    {s}" for s in c.c_body] + ["}"]
        out += ["int main(void) {"] + [f"    {n}();" for n, _ in self.cases]
        return "\n".join(out + ["    return 0;", "}"]) + "\n"

    @property
    def files(self) -> dict[str, bytes]:
        return {k: v for _, c in self.cases for k, v in c.files.items()}


def expr(rng: random.Random, names: list[str], depth: int = 2) -> str:
    """A fully parenthesized expression, the same text in Mettle and C."""
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(names) if rng.random() < 0.7 else str(rng.randint(0, 99))
    return f"({expr(rng, names, depth - 1)} {rng.choice(OPS)} {expr(rng, names, depth - 1)})"


def _value(rng: random.Random) -> int:
    return rng.choice([0, 1, 7, 255, 65535, 2147483647, rng.randint(0, 1 << 31)])


# ---------------------------------------------------------------- the constructs
def generics(rng: random.Random, k: str) -> Case:
    c = Case()
    e1, e2, op = expr(rng, ["a", "b"]), expr(rng, ["t", "a", "b"]), rng.choice(OPS)
    c.m_decls += [f"fn g{k}<T>(a: T, b: T) -> T {{ var t: T = {e1}; return {e2}; }}",
                  f"struct P{k}<T> {{ x: T; y: T; }}",
                  f"fn sum{k}<T>(p: P{k}<T>) -> T {{ return p.x {op} p.y; }}"]
    for ty in rng.sample(sorted(WIDE), 2):
        ct = WIDE[ty]
        c.c_decls += [f"static {ct} g{k}_{ty}({ct} a, {ct} b) {{ {ct} t = {e1}; "
                      f"return {e2}; }}",
                      f"typedef struct {{ {ct} x; {ct} y; }} P{k}_{ty};",
                      f"static {ct} sum{k}_{ty}(P{k}_{ty} p) {{ return p.x {op} p.y; }}"]
        a, b = _value(rng), _value(rng)
        c.m_body += [f"var p_{ty}: P{k}<{ty}>;", f"p_{ty}.x = ({ty}){a};",
                     f"p_{ty}.y = ({ty}){b};",
                     f"out((int64)g{k}<{ty}>(({ty}){a}, ({ty}){b}));",
                     f"out((int64)sum{k}<{ty}>(p_{ty}));"]
        c.c_body += [f"P{k}_{ty} p_{ty};", f"p_{ty}.x = ({ct}){a}LL;",
                     f"p_{ty}.y = ({ct}){b}LL;",
                     f"out((int64_t)g{k}_{ty}(({ct}){a}LL, ({ct}){b}LL));",
                     f"out((int64_t)sum{k}_{ty}(p_{ty}));"]
    return c


def traits(rng: random.Random, k: str) -> Case:
    c = Case()
    e_prim, e_struct = expr(rng, ["self", "k"]), expr(rng, ["a", "b", "k"])
    e_method = expr(rng, ["a", "b", "m"])
    c.m_decls += [
        f"trait S{k} {{ fn score{k}(self: Self, k: int64) -> int64; }}",
        f"impl S{k} for int64 {{ fn score{k}(self: Self, k: int64) -> int64 "
        f"{{ return {e_prim}; }} }}",
        f"struct C{k} {{",
        "    a: int64;",
        "    b: int64;",
        f"    method mix(m: int64) -> int64 {{ return "
        f"{e_method.replace('a', 'this.a').replace('b', 'this.b')}; }}",
        "}",
        f"impl S{k} for C{k} {{ fn score{k}(self: Self, k: int64) -> int64 {{ return "
        f"{e_struct.replace('a', 'self.a').replace('b', 'self.b')}; }} }}",
        f"fn via{k}<T: S{k}>(x: T, k: int64) -> int64 {{ return x.score{k}(k); }}"]
    c.c_decls += [
        f"static int64_t prim{k}(int64_t self, int64_t k) {{ return {e_prim}; }}",
        f"typedef struct {{ int64_t a; int64_t b; }} C{k};",
        f"static int64_t mix{k}(C{k} s, int64_t m) {{ int64_t a = s.a, b = s.b; "
        f"return {e_method}; }}",
        f"static int64_t st{k}(C{k} s, int64_t k) {{ int64_t a = s.a, b = s.b; "
        f"return {e_struct}; }}"]
    v, a, b, q = (rng.randint(0, 1 << 40) for _ in range(4))
    c.m_body += [f"var v: int64 = {v};", f"var s: C{k};", f"s.a = {a};", f"s.b = {b};",
                 f"out(v.score{k}({q}));", f"out(s.score{k}({q}));", f"out(s.mix({q}));",
                 f"out(via{k}<int64>(v, {q} + 1));", f"out(via{k}<C{k}>(s, {q} + 2));"]
    c.c_body += [f"int64_t v = {v}LL;", f"C{k} s;", f"s.a = {a}LL;", f"s.b = {b}LL;",
                 f"out(prim{k}(v, {q}LL));", f"out(st{k}(s, {q}LL));",
                 f"out(mix{k}(s, {q}LL));", f"out(prim{k}(v, {q}LL + 1));",
                 f"out(st{k}(s, {q}LL + 2));"]
    return c


def closures(rng: random.Random, k: str) -> Case:
    c = Case()
    step, thin = expr(rng, ["base", "x"]), expr(rng, ["x"])
    c.m_decls += [
        f"fn mk{k}(base: int64) -> Fn(int64) -> int64 {{",
        f"    return fn(x: int64) -> int64 {{ base = {step}; return base; }};",
        "}",
        f"fn apply{k}(f: Fn(int64) -> int64, x: int64) -> int64 {{ return f(x); }}",
        f"fn named{k}(x: int64) -> int64 {{ return {thin}; }}"]
    c.c_decls += [
        f"typedef struct {{ int64_t base; }} Env{k};",
        f"static Env{k} *mk{k}(int64_t base) {{ Env{k} *e = calloc(1, sizeof *e); "
        f"e->base = base; return e; }}",
        f"static int64_t call{k}(Env{k} *e, int64_t x) {{ int64_t base = e->base; "
        f"e->base = {step}; return e->base; }}",
        f"static int64_t named{k}(int64_t x) {{ return {thin}; }}"]
    b0, calls = rng.randint(0, 1000), [rng.randint(0, 1 << 20) for _ in range(3)]
    c.m_body += [f"var f: Fn(int64) -> int64 = mk{k}({b0});",
                 f"var g: Fn(int64) -> int64 = mk{k}({b0 + 1});",
                 f"var t: fn(int64) -> int64 = fn(x: int64) -> int64 {{ return {thin}; }};"]
    c.c_body += [f"Env{k} *f = mk{k}({b0}LL);", f"Env{k} *g = mk{k}({b0 + 1}LL);"]
    for x in calls:
        c.m_body += [f"out(f({x}));", f"out(apply{k}(g, {x}));", f"out(t({x}));",
                     f"out(apply{k}(&named{k}, {x}));"]
        c.c_body += [f"out(call{k}(f, {x}LL));", f"out(call{k}(g, {x}LL));",
                     f"out(named{k}({x}LL));", f"out(named{k}({x}LL));"]
    return c


def match(rng: random.Random, k: str) -> Case:
    c = Case()
    ea, eb = expr(rng, ["v", "i"]), expr(rng, ["w", "i"])
    n, ca, cb, const = rng.randint(4, 9), rng.randint(2, 4), rng.randint(2, 4), \
        rng.randint(0, 99)
    c.m_decls += [
        f"enum E{k} {{ A(int64), B(int32), Z }}",
        f"fn eval{k}(e: E{k}, i: int64) -> int64 {{",
        f"    var r: int64 = match (e) {{ case A(v): {ea}, case B(w): "
        f"(int64)w * {const}, case Z: {const} }};",
        "    match (e) {",
        f"        case B(w): {{ r = r + {eb.replace('w', '(int64)w')}; }}",
        "        default: { r = r + 1; }",
        "    }",
        "    return r;",
        "}"]
    c.c_decls += [
        f"typedef struct {{ int32_t tag; union {{ int64_t a; int32_t b; }} u; }} E{k};",
        f"static int64_t eval{k}(E{k} e, int64_t i) {{",
        "    int64_t r;",
        f"    if (e.tag == 0) {{ int64_t v = e.u.a; r = {ea}; }}",
        f"    else if (e.tag == 1) {{ int64_t w = e.u.b; r = w * {const}; }}",
        f"    else {{ r = {const}; }}",
        f"    if (e.tag == 1) {{ int64_t w = e.u.b; r = r + {eb}; }} else {{ r = r + 1; }}",
        "    return r;",
        "}"]
    c.m_body += [f"for (var i: int64 = 0; i < {n}; i = i + 1) {{",
                 f"    var e: E{k} = Z;",
                 f"    if (i % {ca} == 0) {{ e = A(i * 1000003); }}",
                 f"    if (i % {cb} == 1) {{ e = B((int32)(i * 77)); }}",
                 f"    out(eval{k}(e, i));", "}"]
    c.c_body += [f"for (int64_t i = 0; i < {n}; i = i + 1) {{",
                 f"    E{k} e; e.tag = 2; e.u.a = 0;",
                 f"    if (i % {ca} == 0) {{ e.tag = 0; e.u.a = i * 1000003; }}",
                 f"    if (i % {cb} == 1) {{ e.tag = 1; e.u.b = (int32_t)(i * 77); }}",
                 f"    out(eval{k}(e, i));", "}"]
    return c


def defer(rng: random.Random, k: str) -> Case:
    c = Case()
    limit, brk, cnt, thr = rng.randint(2, 7), rng.randint(0, 8), rng.randint(0, 8), \
        rng.randint(0, 30)
    body = expr(rng, ["r", "i"])
    c.m_decls += [
        f"fn d{k}(n: int64) -> int64 {{",
        "    var r: int64 = n;",
        "    defer out(1);",
        "    errdefer out(2);",
        f"    for (var i: int64 = 0; i < {limit}; i = i + 1) {{",
        "        defer out(10 + i);",
        f"        if (i == {brk}) {{ break; }}",
        f"        if (i == {cnt}) {{ continue; }}",
        f"        r = {body};",
        "    }",
        "    defer r = 0;",
        f"    if (n > {thr}) {{ return r; }}",
        "    return 0;",
        "}"]
    c.c_decls += [
        f"static int64_t d{k}(int64_t n) {{",
        "    int64_t r = n, ret;",
        f"    for (int64_t i = 0; i < {limit}; i = i + 1) {{",
        f"        if (i == {brk}) {{ out(10 + i); break; }}",
        f"        if (i == {cnt}) {{ out(10 + i); continue; }}",
        f"        r = {body};",
        "        out(10 + i);",
        "    }",
        f"    ret = n > {thr} ? r : 0;",
        "    if (ret != 0) { out(2); }",
        "    out(1);",
        "    return ret;",
        "}"]
    for n in rng.sample(range(0, 40), 3):
        c.m_body.append(f"out(d{k}({n}));")
        c.c_body.append(f"out(d{k}({n}));")
    return c


def new(rng: random.Random, k: str) -> Case:
    c = Case()
    count, e = rng.randint(1, 12), expr(rng, ["i", "acc"])
    c.m_decls += [f"struct N{k} {{ v: int64; next: N{k}*; }}",
                  f"fn push{k}(h: N{k}*, v: int64) -> N{k}* {{ var n: N{k}* = new N{k}; "
                  "n.v = v; n.next = h; return n; }"]
    c.c_decls += [f"typedef struct N{k} {{ int64_t v; struct N{k} *next; }} N{k};",
                  f"static N{k} *push{k}(N{k} *h, int64_t v) {{ N{k} *n = calloc(1, "
                  "sizeof *n); n->v = v; n->next = h; return n; }"]
    c.m_body += [f"var h: N{k}* = 0;", "var acc: int64 = 1;",
                 f"for (var i: int64 = 0; i < {count}; i = i + 1) {{ acc = {e}; "
                 f"h = push{k}(h, acc); }}",
                 "var sum: int64 = 0;",
                 "while (h != 0) { sum = sum * 31 + h.v; h = h.next; }",
                 "out(sum);", "var z: int64* = new int64;", "out(*z);",
                 f"var arr: int32[4]* = new int32[4];", "out((int64)(*arr)[3]);"]
    c.c_body += [f"N{k} *h = 0;", "int64_t acc = 1;",
                 f"for (int64_t i = 0; i < {count}; i = i + 1) {{ acc = {e}; "
                 f"h = push{k}(h, acc); }}",
                 "int64_t sum = 0;",
                 "while (h) { sum = sum * 31 + h->v; h = h->next; }",
                 "out(sum);", "int64_t *z = calloc(1, sizeof *z);", "out(*z);",
                 "int32_t (*arr)[4] = calloc(1, sizeof *arr);", "out((*arr)[3]);"]
    return c


def import_str(rng: random.Random, k: str) -> Case:
    c = Case()
    data = bytes(rng.choice(b"abcxyz019 _-\n\t\x01\xff") for _ in range(rng.randint(0, 40)))
    name = f"emb{k}.txt"
    c.files[name] = data
    c.m_decls += [f'var s{k}: string = import_str "{name}";']
    c.c_decls += [f"static const unsigned char s{k}[] = {{{', '.join(map(str, data)) or '0'}}};",
                  f"static const int64_t len{k} = {len(data)};"]
    c.m_body += ["var h: int64 = 0;",
                 f"for (var i: int64 = 0; i < s{k}.length; i = i + 1) {{ "
                 f"h = h * 131 + (int64)s{k}.chars[i]; }}",
                 "out(h);", f"out(s{k}.length);"]
    c.c_body += ["int64_t h = 0;",
                 f"for (int64_t i = 0; i < len{k}; i = i + 1) {{ h = h * 131 + s{k}[i]; }}",
                 "out(h);", f"out(len{k});"]
    return c


CONSTRUCTS = {"generics": generics, "traits": traits, "closures": closures, "match": match,
              "defer": defer, "new": new, "import_str": import_str}


def later_program(seed: int) -> LaterProgram:
    """Every construct once, in a seeded order, each with seeded shapes."""
    rng = random.Random(seed)
    names = sorted(CONSTRUCTS)
    rng.shuffle(names)
    return LaterProgram(seed, [(f"case_{n}", CONSTRUCTS[n](rng, f"{i}"))
                               for i, n in enumerate(names)])


def check(prog: LaterProgram, workdir: str, targets, opts) -> tuple[Outcome, list[str]]:
    """The C outcome and a line per (target, opt) whose Mettle build disagrees."""
    for name, data in prog.files.items():
        with open(os.path.join(workdir, name), "wb") as f:
            f.write(data)
    ref = run_c(prog.c(), workdir, f"later{prog.seed}")
    bad = []
    if ref.kind != "ok":
        return ref, bad
    for t in targets:
        for opt in opts:
            got = run_mettle(prog.mettle(), workdir, t, opt, f"later{prog.seed}")
            if not ref.same(got):
                bad.append(f"seed {prog.seed} {t.name} {opt}: {got.kind}: "
                           f"{_first_difference(ref, got)}")
    return ref, bad


def _first_difference(ref: Outcome, got: Outcome) -> str:
    if got.kind != "ok":
        return got.detail[:600]
    for i, (a, b) in enumerate(zip(ref.stdout.splitlines(), got.stdout.splitlines())):
        if a != b:
            return f"output line {i + 1}: C {a}, Mettle {b}"
    return f"C printed {len(ref.stdout.splitlines())} lines, Mettle " \
        f"{len(got.stdout.splitlines())}"


def main(seeds, a, targets, out) -> int:
    """`--later`: every program on every target and opt level; exit 1 on a disagreement."""
    import tempfile
    import time
    if a.show:
        for s in seeds:
            p = later_program(s)
            print(p.mettle(), p.c(), sep="\n", file=out)
            for name, data in p.files.items():
                print(f"// file {name}: {data!r}", file=out)
        return 0
    opts = [o for o in a.opt.split(",") if o in OPT_LEVELS]
    bad, oracle_failed, t0 = [], [], time.time()
    with tempfile.TemporaryDirectory(prefix="difftest-later-") as work:
        for s in seeds:
            prog = later_program(s)
            ref, found = check(prog, work, targets, opts)
            if ref.kind != "ok":
                oracle_failed.append(s)
                print(f"seed {s}: the C oracle failed ({ref.kind}): {ref.detail[:500]}",
                      file=out, flush=True)
            for line in found:
                print(line, file=out, flush=True)
            if found and a.out:
                os.makedirs(a.out, exist_ok=True)
                stem = os.path.join(a.out, f"later{s}")
                for suffix, text in ((".mettle", prog.mettle()), (".c", prog.c())):
                    with open(stem + suffix, "w") as f:
                        f.write(text)
                for name, data in prog.files.items():
                    with open(os.path.join(a.out, name), "wb") as f:
                        f.write(data)
            bad += found
    print(f"difftest --later: {len(seeds)} programs on "
          f"{', '.join(t.name for t in targets)} ({', '.join(opts)}), {len(bad)} disagreeing, "
          f"{len(oracle_failed)} skipped (C oracle failed), {time.time() - t0:.0f}s", file=out)
    return 1 if bad or oracle_failed else 0
