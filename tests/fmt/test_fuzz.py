"""Fuzz the formatter with the frontend fuzzers' programs: every mutated program that parses
formats without refusal or crash, to a fixed point, and parses to the same tree. Layout
mutations (line breaks, spaces and comments between tokens) stress the printer most."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.frontend.test_fuzz import EXTRA, SEEDS, TOKEN_RE, TOKENS
from tests.frontend_sema.test_fuzz import SOURCES, mutate
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.fmt import format_source
from toolchain.compiler.fmt.verify import dump
from toolchain.compiler.frontend import parse_source

from .corpus import mettle_files

# The frontend fuzzers' seeds and a few repository files (longer lists, comments, switches;
# the later tier: generics, traits, impls, methods, match, defer, lambdas).
LAYOUT_SEEDS = SEEDS + [p.read_text(encoding="utf-8") for p in mettle_files()
                        if p.name in ("vadd4.mettle", "io.mettle", "host_program.mettle",
                                      "typical200.mettle", "all_constructs.mettle",
                                      "enums_match.mettle", "closures.mettle")]
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
LAYOUT = ["\n", "\n\n\n", "   ", "\t", " // c\n", " /* c */ ", "\n/* c\n d */\n", "",
          "\n// own line\n", "/*a*/"]


def check(src: str) -> bool:
    """Format `src` if it parses; False when it does not."""
    try:
        before = parse_source(src, "fuzz.mettle")
    except CompileError:
        return False
    out = format_source(src, "fuzz.mettle")
    assert format_source(out, "fuzz.mettle") == out
    assert dump(parse_source(out, "fuzz.mettle")) == dump(before)
    return True


def test_the_seeds_format():
    assert all(check(seed) for seed in SEEDS)


@SETTINGS
@given(st.sampled_from(LAYOUT_SEEDS), st.data())
def test_layout_mutations(seed, data):
    toks = TOKEN_RE.findall(seed)
    for _ in range(data.draw(st.integers(1, 12))):
        i = data.draw(st.integers(0, len(toks)))
        if i < len(toks) and toks[i].isspace():
            toks[i] = data.draw(st.sampled_from(LAYOUT)) or " "
        else:
            toks.insert(i, data.draw(st.sampled_from(LAYOUT)))
    check("".join(toks))


@SETTINGS
@given(st.sampled_from(SEEDS), st.data())
def test_token_mutations(seed, data):
    toks = TOKEN_RE.findall(seed)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["delete", "dup", "swap", "insert", "random"]))
        i = data.draw(st.integers(0, len(toks) - 1))
        j = data.draw(st.integers(0, len(toks) - 1))
        if op == "delete":
            del toks[i]
        elif op == "dup":
            toks.insert(i, toks[i])
        elif op == "swap":
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "insert":
            toks.insert(i, data.draw(st.sampled_from(EXTRA)))
        else:
            toks.insert(i, data.draw(st.sampled_from(TOKENS)))
        toks = toks or ["x"]
    check("".join(toks))


def test_line_mutations_of_the_frontend_fixtures():
    rng = random.Random(27)
    parsed = 0
    for _ in range(120):
        text = rng.choice(SOURCES).read_text(encoding="utf-8")
        for _ in range(rng.randrange(1, 4)):
            text = mutate(text, rng)
        parsed += check(text)
    assert parsed > 20
